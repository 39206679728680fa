#include "member_errors.h"

#include <syslog.h>

#include <cerrno>
#include <cstring>

namespace peregrine::fs {

MemberErrorLog::MemberErrorLog(LogLine log)
    : log_(std::move(log)), counts_(new std::atomic<uint64_t>[kEngineMaxDrives]) {
  for (uint32_t i = 0; i < kEngineMaxDrives; ++i) counts_[i].store(0);
}

std::string MemberErrorLog::describe(const IoErrorReport& r, const std::string& name) {
  const char* op = r.op == IoOp::read ? "read" : r.op == IoOp::write ? "write" : "flush";
  std::string s = "member " + name + " (index " + std::to_string(r.drive) + "): " + op;
  if (r.op != IoOp::flush)
    s += " of " + std::to_string(r.length) + " bytes at member offset " + std::to_string(r.member_offset);
  if (r.past_end) return s + " found the end of the member: it is shorter than the volume (truncated?)";
  s += " failed: ";
  s += std::strerror(-r.error);
  if (r.error == -ENODEV || r.error == -ENXIO) s += " (the device is gone)";
  return s;
}

void MemberErrorLog::report(const IoErrorReport& r) {
  std::string line;
  {
    MutexLock lk(mu_);
    line = describe(r, r.drive < names_.size() ? names_[r.drive] : std::string("?"));
    if (r.op != IoOp::read) last_write_failure_ = line;
  }
  uint64_t n = r.drive < kEngineMaxDrives ? counts_[r.drive].fetch_add(1) + 1 : 1;
  if (n < kLoggedPerMember) {
    log_(LOG_ERR, line);
  } else if (n == kLoggedPerMember) {
    log_(LOG_ERR, line + "; further errors on this member are only counted (peregrine stats)");
  }
}

std::string MemberErrorLog::last_write_failure() const {
  MutexLock lk(mu_);
  return last_write_failure_;
}

}  // namespace peregrine::fs
