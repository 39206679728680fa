#include "lock_holder.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "peregrine/volume/mount_record.h"
#include "peregrine/volume/mount_table.h"

namespace peregrine {
namespace {

// The pid /proc/locks gives for a FLOCK on the file `fd` is open on: the
// process that took it (the lock belongs to the open file description; a
// daemon takes it itself). Lines read "1: FLOCK  ADVISORY  WRITE 1234
// 08:01:5678 0 EOF", the device as hex major:minor; "->" marks a waiter.
pid_t flock_holder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return 0;
  std::ifstream in("/proc/locks");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, kind, advisory, mode, dev;
    long pid = 0;
    if (!(f >> id >> kind) || kind == "->" || kind != "FLOCK") continue;
    if (!(f >> advisory >> mode >> pid >> dev)) continue;
    unsigned maj = 0, min = 0;
    uint64_t ino = 0;
    if (std::sscanf(dev.c_str(), "%x:%x:%" SCNu64, &maj, &min, &ino) != 3) continue;
    if (makedev(maj, min) == st.st_dev && ino == st.st_ino && pid != ::getpid()) return static_cast<pid_t>(pid);
  }
  return 0;
}

bool has_fuse_device_open(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (struct dirent* e = ::readdir(d)) {
    char target[64];
    ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == "/dev/fuse") {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

MemberHolder find_member_holder(const MemberFile& member) {
  MemberHolder h;
  h.pid = flock_holder(member.fd());
  if (h.pid == 0 || !has_fuse_device_open(h.pid)) return h;
  h.fuse_daemon = true;
  auto record = read_mount_record(member);
  if (!record || !*record || (*record)->state != MountRecord::State::kMounted) return h;
  h.mountpoint = (*record)->mountpoint;
  const std::string spelled = resolve_parent(h.mountpoint);
  for (const MountTableEntry& e : read_mount_table())
    if ((e.mountpoint == spelled || e.mountpoint == h.mountpoint) && e.fstype == "fuse.peregrine")
      h.still_mounted = true;
  return h;
}

}  // namespace peregrine
