// One inode of the in-memory model: attributes, symlink target, xattrs,
// the extent map (regular files) and the entries (directories).
//
// Thread rules: none inside; every Inode is owned by the Model and guarded
// by Metadata's namespace lock (shared to read, exclusive to change).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "peregrine/meta/directory.h"
#include "peregrine/meta/extent_map.h"
#include "peregrine/meta/types.h"

namespace peregrine::meta {

struct Inode {
  InodeAttr attr;                                          // attr.blocks is derived from `extents` on getattr
  std::string symlink;                                     // S_IFLNK only
  std::map<std::string, std::string, std::less<>> xattrs;  // name -> value; found by string_view
  ExtentMap extents;                                       // S_IFREG only
  std::unique_ptr<Directory> dir;                          // S_IFDIR only

  // Derived / volatile state (not persisted as such):
  // Directories: the one directory holding them. Other inodes: a hint, a
  // directory that held one of their names (the last to give one; after a
  // checkpoint load, any); an unlink, or a rename away from or over that
  // name, may have made it stale. paths_of looks there first.
  Ino parent = 0;
  uint32_t open_count = 0;  // open handles (unlinked-but-open files)
  // An O_TMPFILE inode that has had no name yet: link() may give it one
  // although its nlink is 0 (a file that lost its names may not get one).
  bool linkable = false;
  uint64_t last_lsn = 0;  // journal sequence of the last change (fsync)
  // Timestamps of rewrites not yet journaled (see Metadata::complete_write),
  // and the ctime of the attributes last journaled (about when that was).
  bool times_unlogged = false;
  int64_t attr_logged_at = 0;

  bool is_dir() const { return S_ISDIR(attr.mode); }
  bool is_reg() const { return S_ISREG(attr.mode); }
  bool is_symlink() const { return S_ISLNK(attr.mode); }
};

}  // namespace peregrine::meta
