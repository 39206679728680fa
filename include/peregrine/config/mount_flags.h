// The one parser of mount -o strings, shared by `peregrine mount -o`,
// `mount.peregrine` (mount -t peregrine, fstab) and the options of a
// [volume.NAME] section (so the systemd unit gets them too).
//
// An option is either a peregrine setting (a dotted key of options.h,
// applied with apply_overrides) or a generic mount option from one table
// (mount_flags()): passed to the kernel's FUSE mount (noexec, noatime...),
// acted on by the daemon (ro, norecovery), an alias of a setting
// (allow_other), or accepted as meaningless here (fstab bookkeeping such as
// nofail or x-systemd.*). Anything else is refused with a suggestion.
//
// Thread rules: plain values and pure functions; call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peregrine/util/result.h"

namespace peregrine::config {

// What a generic mount option does here.
enum class FlagUse {
  kKernel,       // passed to the kernel's FUSE mount (MS_* flag)
  kReadOnly,     // ro: kernel read-only, daemon writes nothing
  kReadWrite,    // rw: the default
  kNoRecovery,   // norecovery / noload: with ro, the journal is not replayed
  kSetting,      // an alias of a peregrine setting (allow_other, acl): MountFlag::setting
  kConfigFile,   // config=FILE: the config file to read
  kMeaningless,  // accepted, nothing to do (read by mount(8), systemd, or always on)
  kRefused,      // known, not supported: refused with its reason
};

struct MountFlag {
  std::string_view name;  // "noexec"; a name ending in '=' or '.' or '-' is a prefix ("x-", "comment=")
  FlagUse use;
  std::string_view doc;           // for docs and refusals: what it does here, or why it is refused
  std::string_view setting = {};  // kSetting: the key=value it stands for
  bool kernel_too = false;        // kSetting: also passed to the kernel's mount (so findmnt shows it)
};

// Every generic option accepted (or known and refused), in documentation order.
const std::vector<MountFlag>& mount_flags();

// The options of one mount, from its -o strings (volume options first,
// then the command line's; later wins).
struct MountRequest {
  std::vector<std::string> settings;  // "key=value" for apply_overrides, in order
  std::vector<std::string> kernel;    // for the FUSE mount: "noexec", "noatime", ...
  std::optional<bool> read_only;      // unset: neither ro nor rw given (rw)
  bool norecovery = false;
  std::string config_file;           // from config=FILE; "" when not given
  std::vector<std::string> unknown;  // refused options kept by a sloppy parse

  bool is_read_only() const { return read_only.value_or(false); }
  // Appends `later`'s options: its ro/rw and config file win.
  void add(const MountRequest& later);
  // The options again as one -o string, without what only mount(8) reads:
  // settings, then ro/norecovery, then kernel flags ("" when none).
  std::string to_string() const;
};

// Parses one -o string. `where` names its origin in messages ("-o",
// "FILE:LINE (volume.NAME.options)"). An unknown option is refused with the
// closest known name, unless `sloppy` (mount -s): then it is kept in
// `unknown`. ro/rw/remount conflicts and norecovery without ro are refused
// by check_mount_request, once everything is added.
Expected<MountRequest> parse_mount_options(std::string_view options, std::string_view where = "-o",
                                           bool sloppy = false);
Status check_mount_request(const MountRequest& request);

}  // namespace peregrine::config
