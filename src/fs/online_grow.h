// Online grow: `peregrine grow MOUNTPOINT` on a mounted volume (the ioctl of
// include/peregrine/fs/grow_ioctl.h, served in fs_grow.cpp). The daemon
// holds the members open and locked, so it does what the offline command
// does (plan_grow / apply_grow of volume/grow.h: member ends zeroed, every
// superblock copy rewritten and synced) and then, only once every copy
// records the new size, lets the engine accept IO past the old end and the
// metadata layer hand out the new space. A crash before that leaves the
// on-disk state of an interrupted offline grow: the next mount uses the
// old size and says so.
//
// Tests only: PEREGRINE_TEST_GROW_STOP_AFTER=K in the daemon's environment
// makes it _exit(9) right after superblock copy K is written and synced.
//
// Thread rules: run() from any thread (an ioctl's worker); one grow at a
// time, under the layout mutex it shares with OnlineReplace and
// OnlineRestripe. The
// VolumeRuntime and Metadata outlive it; nothing else changes the volume's
// superblock fields meanwhile.
#pragma once

#include <functional>
#include <string>

#include "peregrine/fs/grow_ioctl.h"
#include "peregrine/fs/volume_runtime.h"
#include "peregrine/meta/metadata.h"
#include "peregrine/util/log_line.h"
#include "peregrine/util/mutex.h"

namespace peregrine::fs {

class OnlineGrow {
 public:
  // `layout_mu` is shared with OnlineReplace and OnlineRestripe;
  // `member_change` says why grow must wait for either ("" when it need
  // not: then grow may go on).
  OnlineGrow(VolumeRuntime& vr, meta::Metadata& md, Mutex& layout_mu, std::function<std::string()> member_change,
             LogLine log)
      : vr_(vr), md_(md), log_(std::move(log)), mu_(layout_mu), member_change_(std::move(member_change)) {}

  // Grows the volume over what its members hold now; the reply as the
  // ioctl returns it.
  GrowIoctl run() EXCLUDES(mu_);

 private:
  VolumeRuntime& vr_;
  meta::Metadata& md_;
  LogLine log_;
  Mutex& mu_;  // one grow or replace switch at a time; guards vr_.volume's superblock fields
  const std::function<std::string()> member_change_;
};

}  // namespace peregrine::fs
