// Directory listing: readdir and readdirplus over the metadata layer's
// cookies ("." is cookie 1, ".." cookie 2, entries 3 and up), and fsyncdir.
//
// A pass is what one open directory lists from offset 0 on: it ends where
// the directory's cookies stood when it began (Metadata::listing_end), so
// an entry renamed away and back, or added, while it runs (it gets a new
// cookie past that end) is not met again, and the pass always ends.
// rewinddir(3) (offset 0 again) begins a new pass that sees them.
#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <vector>

#include "fs_context.h"

namespace peregrine::fs {
namespace {

// The state of one open directory (fuse_file_info::fh), created by opendir
// and deleted by releasedir. Its readdir requests may come on any worker
// thread, hence the atomic; the kernel sends one at a time per open file.
struct OpenDir {
  std::atomic<uint64_t> pass_end{meta::Metadata::kNoListingEnd};
  bool no_atime = false;  // opened with O_NOATIME: its listings are no access
};

OpenDir& open_dir(const fuse_file_info* fi) { return *reinterpret_cast<OpenDir*>(fi->fh); }

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
  // A pass that starts elsewhere than at offset 0 (seekdir to a cookie
  // of an earlier open) ends where the entries stood at opendir.
  auto dir = std::make_unique<OpenDir>();
  uint64_t end = meta::Metadata::kNoListingEnd;
  fs.meta.listing_end(ino, &end);
  dir->pass_end.store(end);
  dir->no_atime = (fi->flags & O_NOATIME) != 0;
  fi->fh = reinterpret_cast<uint64_t>(dir.get());
  // The kernel may keep the listing in its page cache across opens
  // (FOPEN_CACHE_DIR, FOPEN_KEEP_CACHE): every change to a directory comes
  // through this mount, and the kernel drops the cached listing itself
  // when one does (its version or mtime moved). `du` or `ls -lR` after
  // `find` then lists each directory without a READDIRPLUS.
  fi->cache_readdir = 1;
  fi->keep_cache = 1;
  // A listing the kernel serves from that cache never reaches list(): the
  // open counts as the access, as an open for reading does on a cached
  // mount (fs_file.cpp); with O_NOATIME, neither counts.
  if (!dir->no_atime && fs.meta.accessed(ino)) attributes_changed(fs, ino);
  if (fuse_reply_open(req, fi) != 0) {  // the opener is gone
    fs.meta.release(ino);
    return;
  }
  dir.release();  // releasedir deletes it
}

void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus, OpenDir& dir) {
  FsContext& fs = context(req);
  if (off == 0) {  // a new pass: it ends where the entries stand now
    uint64_t end = 0;
    if (int rc = fs.meta.listing_end(ino, &end); rc != 0) return (void)fuse_reply_err(req, -rc);
    dir.pass_end.store(end);
  }
  const uint64_t pass_end = dir.pass_end.load();
  // Not zeroed: the kernel asks for as much as the program's getdents
  // buffer (up to max_pages), and only what was added is sent.
  auto buf = std::make_unique_for_overwrite<char[]>(size);
  size_t used = 0;
  // Adds one entry; false when the buffer is full.
  auto add = [&](const char* name, const meta::InodeAttr& a, uint64_t next_off) {
    size_t room = size - used;
    size_t n;
    if (plus) {
      fuse_entry_param e = make_entry(fs, a);
      n = fuse_add_direntry_plus(req, buf.get() + used, room, name, &e, static_cast<off_t>(next_off));
    } else {
      struct stat st {};
      st.st_ino = a.ino;
      st.st_mode = a.mode;
      n = fuse_add_direntry(req, buf.get() + used, room, name, &st, static_cast<off_t>(next_off));
    }
    if (n > room) return false;
    used += n;
    return true;
  };
  uint64_t cookie = static_cast<uint64_t>(off);
  // A listing reads the directory (fs_read.cpp: the daemon keeps atimes).
  if (!dir.no_atime && fs.meta.accessed(ino)) attributes_changed(fs, ino);
  meta::InodeAttr self;
  int rc = fs.meta.getattr(ino, &self);
  if (rc != 0) {
    fuse_reply_err(req, -rc);
    return;
  }
  if (cookie < 1) {
    if (!add(".", self, 1)) return (void)fuse_reply_buf(req, buf.get(), used);
    cookie = 1;
  }
  if (cookie < 2) {
    // ".." carries this directory's attributes: the kernel fills in the real
    // parent itself and never looks it up through readdirplus.
    if (!add("..", self, 2)) return (void)fuse_reply_buf(req, buf.get(), used);
    cookie = 2;
  }
  std::vector<meta::DirEntry> entries;
  for (;;) {
    entries.clear();
    // Roughly as many as fit; a plus entry takes ~150 bytes, a plain one ~32.
    size_t want = std::max<size_t>(16, (size - used) / (plus ? 140 : 32));
    rc = fs.meta.readdir(ino, cookie, want, &entries, pass_end);
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
  fuse_reply_buf(req, buf.get(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  list(req, ino, size, off, false, open_dir(fi));
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  list(req, ino, size, off, true, open_dir(fi));
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  delete &open_dir(fi);
  fuse_reply_err(req, -context(req).meta.release(ino));
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  FsContext& fs = context(req);
  // `sync DIR` (coreutils fsyncs a path it is given) and `peregrine sync`
  // (syncfs, an fsync of each file open for writing, then one of the mount
  // root) come here: the kernel sends no SYNCFS to a /dev/fuse daemon, so
  // this is the volume's sync. Every
  // change so far becomes durable, not only the directory's: a commit
  // carries only what is pending when it starts, and a directory whose
  // own last change is durable would commit nothing. So: the writebacks
  // answered before their IO (their extents are marked written once they
  // land), the drives' caches, then the whole journal with every file's
  // deferred times.
  // An answered write that failed on the members since the last such
  // sync is reported here once (its file's fsync reports it too).
  int rc = fs.write_behind.wait_all();
  if (rc == 0 && !fs.meta.planted_journal_without_data_flush()) rc = fs.sync_io.flush();
  if (rc == 0) rc = fs.meta.sync();
  fuse_reply_err(req, -rc);
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
