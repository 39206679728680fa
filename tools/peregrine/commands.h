// Subcommands of the `peregrine` multi-call binary. Each lives in its own
// cmd_*.cpp, takes argv with argv[0] = the subcommand name, prints its own
// errors and returns the process exit code.
// Thread rules: called on the main thread.
#pragma once

namespace peregrine::cli {

int cmd_mkfs(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_examine(int argc, char** argv);
int cmd_scan(int argc, char** argv);
int cmd_fsck(int argc, char** argv);
int cmd_mount(int argc, char** argv);
int cmd_mount_helper(int argc, char** argv);   // mount.peregrine, called by mount(8)
int cmd_umount_helper(int argc, char** argv);  // umount.fuse.peregrine, called by umount(8)
int cmd_stats(int argc, char** argv);
int cmd_sync(int argc, char** argv);
int cmd_config(int argc, char** argv);
int cmd_replace(int argc, char** argv);
int cmd_grow(int argc, char** argv);

}  // namespace peregrine::cli
