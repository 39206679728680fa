#include "peregrine/fs/caller_cpu.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string>

namespace peregrine::fs {

CallerCpu::~CallerCpu() {
  if (fd_ >= 0) ::close(fd_);
}

int CallerCpu::parse_stat(std::string_view line) {
  const size_t name_end = line.rfind(')');
  if (name_end == std::string_view::npos) return -1;
  // After the name: " S ppid ..." with the state as field 3, so the
  // processor, field 39, is the 37th word from here.
  std::string_view rest = line.substr(name_end + 1);
  constexpr int kWordsToProcessor = 37;
  int word = 0;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    if (i == rest.size()) break;
    size_t end = rest.find(' ', i);
    if (end == std::string_view::npos) end = rest.size();
    if (++word == kWordsToProcessor) {
      int cpu = -1;
      auto [ptr, ec] = std::from_chars(rest.data() + i, rest.data() + end, cpu);
      if (ec != std::errc{} || cpu < 0) return -1;
      // A trailing newline ends the last field; anything else is not a number.
      if (ptr != rest.data() + end && *ptr != '\n') return -1;
      return cpu;
    }
    i = end;
  }
  return -1;
}

int CallerCpu::of(uint32_t tid) {
  if (tid == 0) return -1;
  if (tid != tid_) {
    if (fd_ >= 0) ::close(fd_);
    const std::string path = "/proc/" + std::to_string(tid) + "/stat";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    tid_ = tid;
  }
  if (fd_ < 0) return -1;
  char buf[1024];
  const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    // The thread ended (ESRCH): ask afresh next time, a new thread may
    // have the number.
    ::close(fd_);
    fd_ = -1;
    tid_ = 0;
    return -1;
  }
  return parse_stat(std::string_view(buf, static_cast<size_t>(n)));
}

}  // namespace peregrine::fs
