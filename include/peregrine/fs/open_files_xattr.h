// The extended attribute of a mount's root under which the daemon lists
// the files open for writing, for `peregrine sync`: syncfs(2) can return
// before the daemon has taken the writebacks it started (Linux 6.18 does
// not wait for a FUSE mapping's writeback in sync), so the command fsyncs
// each such file, which waits for them. One definition for both sides.
//
// The value is a page of records "INO<TAB>PATH<NUL>", inodes ascending,
// PATH relative to the root and empty when the one the daemon found (of a
// hard-linked file's names, any) is not shorter than PATH_MAX. A caller
// other than root sees only the files it owns. The base name gives the
// first page; kOpenFilesXattr + ".after." + INO the page after that inode.
// A page ends where the next record would pass kOpenFilesPageBytes, and
// the page after the last is empty.
//
// Thread rules: constants.
#pragma once
#include <cstddef>

namespace peregrine::fs {

inline constexpr const char* kOpenFilesXattr = "user.peregrine.open_for_writing";
inline constexpr const char* kOpenFilesAfter = ".after.";
// XATTR_SIZE_MAX: the most a getxattr(2) value can hold.
inline constexpr size_t kOpenFilesPageBytes = 65536;

}  // namespace peregrine::fs
