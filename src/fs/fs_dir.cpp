// Directory listing: readdir and readdirplus over the metadata layer's
// cookies ("." is cookie 1, ".." cookie 2, entries 3 and up), and fsyncdir.
#include <cerrno>
#include <vector>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

// An open directory is counted like an open file: if rmdir or a rename
// over it takes its last name meanwhile, it stays (an orphan, with no
// links) until releasedir, so fstat on the descriptor still answers.
void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FsContext& fs = context(req);
  meta::InodeAttr a;
  int rc = fs.meta.getattr(ino, &a);
  if (rc == 0 && !S_ISDIR(a.mode)) rc = -ENOTDIR;
  if (rc == 0) rc = fs.meta.open(ino);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  if (fuse_reply_open(req, fi) != 0) fs.meta.release(ino);  // the opener is gone
}

void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  FsContext& fs = context(req);
  std::vector<char> buf(size);
  size_t used = 0;
  // Adds one entry; false when the buffer is full.
  auto add = [&](const char* name, const meta::InodeAttr& a, uint64_t next_off) {
    size_t room = size - used;
    size_t n;
    if (plus) {
      fuse_entry_param e = make_entry(fs, a);
      n = fuse_add_direntry_plus(req, buf.data() + used, room, name, &e, static_cast<off_t>(next_off));
    } else {
      struct stat st {};
      st.st_ino = a.ino;
      st.st_mode = a.mode;
      n = fuse_add_direntry(req, buf.data() + used, room, name, &st, static_cast<off_t>(next_off));
    }
    if (n > room) return false;
    used += n;
    return true;
  };
  uint64_t cookie = static_cast<uint64_t>(off);
  meta::InodeAttr self;
  int rc = fs.meta.getattr(ino, &self);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  if (cookie < 1) {
    if (!add(".", self, 1)) return (void)fuse_reply_buf(req, buf.data(), used);
    cookie = 1;
  }
  if (cookie < 2) {
    // ".." carries this directory's attributes: the kernel fills in the real
    // parent itself and never looks it up through readdirplus.
    if (!add("..", self, 2)) return (void)fuse_reply_buf(req, buf.data(), used);
    cookie = 2;
  }
  std::vector<meta::DirEntry> entries;
  for (;;) {
    entries.clear();
    // Roughly as many as fit; a plus entry takes ~150 bytes, a plain one ~32.
    size_t want = std::max<size_t>(16, (size - used) / (plus ? 140 : 32));
    rc = fs.meta.readdir(ino, cookie, want, &entries);
    if (rc != 0) {
      if (used == 0) return (void)fuse_reply_err(req, -rc);
      break;
    }
    if (entries.empty()) break;
    bool full = false;
    for (const meta::DirEntry& d : entries) {
      meta::InodeAttr a;
      if (plus) {
        // An entry removed since readdir listed it is simply skipped.
        if (fs.meta.getattr(d.ino, &a) != 0) {
          cookie = d.cookie;
          continue;
        }
      } else {
        a.ino = d.ino;
        a.mode = d.type;
      }
      if (!add(d.name.c_str(), a, d.cookie)) {
        full = true;
        break;
      }
      cookie = d.cookie;
    }
    if (full) break;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  list(req, ino, size, off, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  list(req, ino, size, off, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  fuse_reply_err(req, -context(req).meta.release(ino));
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  fuse_reply_err(req, -context(req).meta.fsync(ino));
}

}  // namespace

void add_dir_ops(fuse_lowlevel_ops& ops) {
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.fsyncdir = op_fsyncdir;
}

}  // namespace peregrine::fs
