// Online grow: OnlineGrow::run and the ioctl that calls it.
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fs_context.h"
#include "online_grow.h"
#include "peregrine/util/test_hooks.h"
#include "peregrine/volume/grow.h"
#include "peregrine/volume/size_text.h"

namespace peregrine::fs {
namespace {

constexpr const char* kStopAfterEnv = "PEREGRINE_TEST_GROW_STOP_AFTER";

GrowIoctl failed(int err, const std::string& why) {
  GrowIoctl r{};
  r.error = err;
  std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
  return r;
}

}  // namespace

GrowIoctl OnlineGrow::run() {
  MutexLock lk(mu_);
  if (member_change_)
    if (std::string why = member_change_(); !why.empty()) return failed(EBUSY, why);
  AssembledVolume& vol = vr_.volume;
  const uint64_t data_offset = vr_.meta_geometry.data_offset;
  GrowIoctl r{};
  r.member_count = vol.superblock.member_count();
  r.old_member_data_size = vol.superblock.member_data_size;
  r.old_data_area = md_.data_size();
  const bool interrupted = !vol.interrupted_grow.empty();
  auto plan = plan_grow(vol, std::nullopt);
  if (!plan) return failed(plan.status().errnum(), plan.status().message());
  std::function<void(int)> after_step;
  if (const char* stop = test_hook(kStopAfterEnv)) {
    const int k = std::atoi(stop);
    log_(LOG_WARNING, std::string("TEST ONLY: grow stops the daemon after superblock copy ") + stop);
    after_step = [k](int step) {
      if (step == k) ::_exit(9);
    };
  }
  if (Status s = apply_grow(vol, *plan, std::nullopt, after_step); !s) {
    log_(LOG_ERR, "online grow failed: " + s.message());
    return failed(s.errnum() != 0 ? s.errnum() : EIO, s.message());
  }
  // Every superblock copy now says the new size, durably: only now may IO
  // and allocations reach past the old end.
  vr_.engine->grow(plan->new_data_size);
  const uint64_t data_area = vr_.engine->map().volume_size() - data_offset;
  if (int rc = md_.grow_data_area(data_area); rc != 0) {
    // The superblocks are grown: the next mount uses the new size.
    const std::string why = "the superblocks record the new size, but the mounted metadata could not take it (" +
                            std::string(std::strerror(-rc)) + "); it is used from the next mount";
    log_(LOG_ERR, "online grow: " + why);
    return failed(-rc, why);
  }
  r.new_member_data_size = plan->new_data_size;
  r.new_data_area = data_area;
  r.flags = interrupted ? kGrowFinishedInterrupted : 0;
  log_(LOG_NOTICE, "grown online: member data size " + format_size(r.old_member_data_size) + " -> " +
                       format_size(r.new_member_data_size) + ", data area " + format_size(r.old_data_area) + " -> " +
                       format_size(r.new_data_area));
  return r;
}

bool admit_member_ioctl(fuse_req_t req, unsigned flags, size_t in_bufsz, size_t out_bufsz, size_t size,
                        bool served) {
  int err = 0;
  if (flags & FUSE_IOCTL_UNRESTRICTED)
    err = EINVAL;
  else if (fuse_req_ctx(req)->uid != 0)
    err = EPERM;
  else if (in_bufsz != size || out_bufsz < size)
    err = EINVAL;
  else if (!served)
    err = ENOTTY;
  if (err != 0) fuse_reply_err(req, err);
  return err == 0;
}

// On a classic worker or a blocking-op thread (as every ioctl): it writes
// and syncs the members.
void serve_grow_ioctl(fuse_req_t req, unsigned flags, size_t in_bufsz, size_t out_bufsz) {
  FsContext& fs = context(req);
  if (!admit_member_ioctl(req, flags, in_bufsz, out_bufsz, sizeof(GrowIoctl), fs.online_grow != nullptr)) return;
  GrowIoctl reply = fs.online_grow->run();
  fuse_reply_ioctl(req, 0, &reply, sizeof reply);
}

}  // namespace peregrine::fs
