// The generic mount options and the one -o parser (mount_flags.h).
#include "peregrine/config/mount_flags.h"

#include <cerrno>

#include "peregrine/config/options.h"
#include "peregrine/config/overrides.h"

namespace peregrine::config {

namespace {

constexpr std::string_view kKernelDoc = "passed to the kernel's mount";
// FUSE inodes never have their atime updated by the kernel: the daemon
// does it (fuse.atime), so these set the daemon's rule.
constexpr std::string_view kNoDirAtimeDoc =
    "accepted; directories follow the same access-time rule as files (fuse.atime)";
constexpr std::string_view kLazytimeDoc =
    "accepted; peregrine already keeps frequent time updates in memory and journals them with the file's "
    "next change, fsync or unmount";
constexpr std::string_view kFstabDoc = "read by mount(8) or systemd, nothing to do for peregrine";

bool is_prefix_entry(std::string_view name) { return !name.empty() && (name.back() == '=' || name.back() == '-'); }

const MountFlag* find_flag(std::string_view item) {
  // A prefix ("user=") wins over the bare name ("user") it extends.
  std::string_view key = item.substr(0, item.find('='));
  const MountFlag* exact = nullptr;
  for (const MountFlag& f : mount_flags()) {
    if (is_prefix_entry(f.name) && item.starts_with(f.name)) return &f;
    if (!is_prefix_entry(f.name) && key == f.name) exact = &f;
  }
  return exact;
}

std::string suggestion_for(std::string_view key) {
  std::vector<std::string_view> names;
  for (const MountFlag& f : mount_flags())
    if (!is_prefix_entry(f.name)) names.push_back(f.name);
  std::string near = key.find('.') == std::string_view::npos ? suggest_among(key, names) : "";
  if (near.empty()) near = suggest_key(key);
  return near;
}

}  // namespace

const std::vector<MountFlag>& mount_flags() {
  static const std::vector<MountFlag> table = {
      {"ro", FlagUse::kReadOnly,
       "read-only: the kernel refuses changes (EROFS) and the daemon writes nothing to the members (no "
       "journal, checkpoint or superblock write); a journal left by a crash is applied in memory only, and "
       "written by the next read-write mount"},
      {"rw", FlagUse::kReadWrite, "read-write (the default)"},
      {"norecovery", FlagUse::kNoRecovery,
       "with ro only: do not apply the journal left by a crash; the volume shows its last checkpoint, which "
       "may lack changes that were fsync'd (they come back at the next read-write mount)"},
      {"noload", FlagUse::kNoRecovery, "the same as norecovery"},
      {"allow_other", FlagUse::kSetting, "the same as fuse.allow_other", "fuse.allow_other"},
      {"acl", FlagUse::kSetting, "POSIX ACLs (the default, as on ext4): the same as fuse.acl=true", "fuse.acl=true"},
      {"noacl", FlagUse::kSetting, "no POSIX ACLs: the same as fuse.acl=false", "fuse.acl=false"},
      {"discard", FlagUse::kSetting,
       "discard (TRIM) freed space on the members as it is freed: the same as fuse.discard=true", "fuse.discard=true"},
      {"nodiscard", FlagUse::kSetting, "the default: freed space is discarded by fstrim only (fuse.discard=false)",
       "fuse.discard=false"},
      {"default_permissions", FlagUse::kMeaningless, "always on: the kernel checks permissions"},
      {"nosuid", FlagUse::kKernel, "passed to the kernel's mount (the default of FUSE mounts)"},
      {"suid", FlagUse::kKernel, "passed to the kernel's mount: set-user-ID bits take effect"},
      {"nodev", FlagUse::kKernel, "passed to the kernel's mount (the default of FUSE mounts)"},
      {"dev", FlagUse::kKernel, "passed to the kernel's mount: device files can be opened"},
      {"noexec", FlagUse::kKernel, kKernelDoc},
      {"exec", FlagUse::kKernel, kKernelDoc},
      {"sync", FlagUse::kKernel, kKernelDoc},
      {"async", FlagUse::kKernel, kKernelDoc},
      {"dirsync", FlagUse::kKernel, kKernelDoc},
      {"noatime", FlagUse::kSetting,
       "access times are never updated: the same as fuse.atime=noatime (also passed to the kernel's mount)",
       "fuse.atime=noatime", true},
      {"atime", FlagUse::kSetting,
       "access times are updated (relatime, the default): fuse.atime=relatime (also passed to the kernel's "
       "mount)",
       "fuse.atime=relatime", true},
      {"relatime", FlagUse::kSetting, "the default: fuse.atime=relatime", "fuse.atime=relatime"},
      {"norelatime", FlagUse::kSetting, "the same as strictatime", "fuse.atime=strictatime"},
      {"strictatime", FlagUse::kSetting, "every read updates the access time: fuse.atime=strictatime",
       "fuse.atime=strictatime"},
      {"nostrictatime", FlagUse::kSetting, "the same as relatime", "fuse.atime=relatime"},
      {"nodiratime", FlagUse::kMeaningless, kNoDirAtimeDoc},
      {"diratime", FlagUse::kMeaningless, kNoDirAtimeDoc},
      {"lazytime", FlagUse::kMeaningless, kLazytimeDoc},
      {"nolazytime", FlagUse::kMeaningless, kLazytimeDoc},
      {"defaults", FlagUse::kMeaningless, "nothing beyond the defaults above"},
      {"auto", FlagUse::kMeaningless, kFstabDoc},
      {"noauto", FlagUse::kMeaningless, kFstabDoc},
      {"nofail", FlagUse::kMeaningless, kFstabDoc},
      {"_netdev", FlagUse::kMeaningless, kFstabDoc},
      {"user", FlagUse::kMeaningless, kFstabDoc},
      {"nouser", FlagUse::kMeaningless, kFstabDoc},
      {"users", FlagUse::kMeaningless, kFstabDoc},
      {"owner", FlagUse::kMeaningless, kFstabDoc},
      {"group", FlagUse::kMeaningless, kFstabDoc},
      {"user=", FlagUse::kMeaningless, kFstabDoc},
      {"x-", FlagUse::kMeaningless, kFstabDoc},
      {"comment=", FlagUse::kMeaningless, kFstabDoc},
      {"nomand", FlagUse::kMeaningless, "the default: Linux has no mandatory locks"},
      {"loud", FlagUse::kMeaningless, "nothing to do"},
      {"silent", FlagUse::kMeaningless, "nothing to do"},
      {"config=", FlagUse::kConfigFile, "read this config file instead of the default one"},
      {"remount", FlagUse::kRefused,
       "only through mount(8) (mount -o remount,ro DIR), which changes ro/rw, nosuid, nodev, noexec, sync "
       "and dirsync of a mounted volume; peregrine mount cannot remount, and settings change only by "
       "unmounting and mounting again"},
      {"mand", FlagUse::kRefused, "mandatory locks are not supported (Linux dropped them)"},
      {"nosymfollow", FlagUse::kRefused, "not supported on peregrine's FUSE mounts"},
  };
  return table;
}

void MountRequest::add(const MountRequest& later) {
  settings.insert(settings.end(), later.settings.begin(), later.settings.end());
  kernel.insert(kernel.end(), later.kernel.begin(), later.kernel.end());
  if (later.read_only) read_only = later.read_only;
  norecovery = norecovery || later.norecovery;
  if (!later.config_file.empty()) config_file = later.config_file;
  unknown.insert(unknown.end(), later.unknown.begin(), later.unknown.end());
}

std::string MountRequest::to_string() const {
  std::vector<std::string> items = settings;
  if (is_read_only()) items.emplace_back("ro");
  if (norecovery) items.emplace_back("norecovery");
  items.insert(items.end(), kernel.begin(), kernel.end());
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

Expected<MountRequest> parse_mount_options(std::string_view options, std::string_view where, bool sloppy) {
  MountRequest out;
  for (std::string& item : split_option_items(options)) {
    const std::string named = std::string(where) + (where == "-o" ? " " : ": ") + item;
    const std::string key = item.substr(0, item.find('='));
    const bool has_value = key.size() != item.size();
    const MountFlag* flag = find_flag(item);
    if (flag == nullptr && key.find('.') != std::string::npos) {
      // A peregrine setting: apply_overrides checks its key and value, and
      // refuses an unknown key with the closest one, as in the conf file.
      out.settings.push_back(std::move(item));
      continue;
    }
    if (flag != nullptr && has_value && !is_prefix_entry(flag->name)) {
      return Status::error(EINVAL, named + ": " + key + " takes no value");
    }
    if (flag == nullptr) {
      if (sloppy) {
        out.unknown.push_back(std::move(item));
        continue;
      }
      std::string near = suggestion_for(key);
      return Status::error(EINVAL, named + ": unknown mount option" +
                                       (near.empty() ? "" : "; did you mean " + near + "?") +
                                       " (peregrine settings have dotted names such as fuse.cache=writeback, see "
                                       "'peregrine config defaults'; mount.peregrine(8) lists the generic options)");
    }
    switch (flag->use) {
      case FlagUse::kKernel: out.kernel.push_back(std::move(item)); break;
      case FlagUse::kReadOnly: out.read_only = true; break;
      case FlagUse::kReadWrite: out.read_only = false; break;
      case FlagUse::kNoRecovery: out.norecovery = true; break;
      case FlagUse::kSetting:
        out.settings.emplace_back(flag->setting);
        if (flag->kernel_too) out.kernel.push_back(std::move(item));
        break;
      case FlagUse::kConfigFile: out.config_file = item.substr(flag->name.size()); break;
      case FlagUse::kMeaningless: break;
      case FlagUse::kRefused: return Status::error(EINVAL, named + ": " + std::string(flag->doc));
    }
  }
  return out;
}

Status check_mount_request(const MountRequest& request) {
  if (request.norecovery && !request.is_read_only())
    return Status::error(EINVAL,
                         "-o norecovery needs ro: a read-write mount must apply the journal first (give -o "
                         "ro,norecovery)");
  return Status::ok();
}

}  // namespace peregrine::config
