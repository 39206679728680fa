// fsck: load state, check invariants, repair, store a new checkpoint.
#include "peregrine/meta/fsck.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "peregrine/meta/allocator.h"
#include "peregrine/meta/posix_acl.h"
#include "txn_builder.h"

namespace peregrine::meta {

Expected<LoadedMetadata> load_metadata(VolumeIo& io, const Geometry& g, uint64_t journal_size) {
  LoadedMetadata lm;
  auto layout = MetaLayout::compute(g, journal_size);
  if (!layout) return layout.status();
  lm.layout = *layout;
  SlotState slots[2] = {read_checkpoint_slot(io, lm.layout, 0), read_checkpoint_slot(io, lm.layout, 1)};
  for (int s = 0; s < 2; ++s) {
    if (slots[s].valid) {
      lm.notes.push_back("checkpoint slot " + std::to_string(s) + ": valid, sequence " +
                         std::to_string(slots[s].header.seq));
    } else {
      lm.notes.push_back("checkpoint slot " + std::to_string(s) + ": " + slots[s].problem);
    }
  }
  if (slots[0].empty && slots[1].empty) {
    lm.fresh = true;
    return lm;
  }
  // Newest first; fall back to the older one if the newest does not decode.
  std::vector<int> order;
  for (int s = 0; s < 2; ++s) {
    if (slots[s].valid) order.push_back(s);
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return slots[a].header.seq > slots[b].header.seq; });
  if (order.empty()) return Status::error(EUCLEAN, "no valid checkpoint in either slot");
  std::string why;
  for (int s : order) {
    const CheckpointHeader& h = slots[s].header;
    if (h.journal_size != lm.layout.journal_size) {
      why = "checkpoint slot " + std::to_string(s) + " written for another journal size";
      continue;
    }
    if (h.data_offset != g.data_offset) {
      why = "checkpoint slot " + std::to_string(s) + " written for another data area offset";
      continue;
    }
    // Not an older slot instead, and no repair: trimming the extents past
    // the end would lose their data (mount refuses it too).
    if (Status st = check_checkpoint_data_size(h.data_size, g.data_size); !st) return st;
    auto model = decode_checkpoint_body(std::as_bytes(std::span(slots[s].body.data(), slots[s].body.size())),
                                        h.next_ino, /*strict=*/false);
    if (!model) {
      why = "checkpoint slot " + std::to_string(s) + ": " + model.status().message();
      lm.notes.push_back(why);
      continue;
    }
    lm.header = h;
    lm.model = std::move(*model);
    Model& m = lm.model;
    auto replay =
        replay_journal(io, lm.layout, JournalPosition{h.journal_tail, h.journal_tail, h.next_lsn, h.journal_salt},
                       [&m](const Txn& t) { return m.apply(t, nullptr); });
    if (!replay) return replay.status();
    lm.replay = *replay;
    // Replay always stops somewhere: normally where no further batch header
    // is found, which is simply the end of the journal.
    std::string replayed = "journal: " + std::to_string(replay->records) + " records in " +
                           std::to_string(replay->batches) + " batches replayed";
    lm.notes.push_back(replay->stop_reason == kJournalEnd ? replayed + ", up to the end of the journal"
                                                          : replayed + "; replay stopped: " + replay->stop_reason);
    return lm;
  }
  return Status::error(EUCLEAN, why);
}

Status store_metadata(VolumeIo& io, const Geometry& g, LoadedMetadata& lm) {
  CheckpointHeader h;
  h.seq = lm.header.seq + 1;
  h.next_lsn = lm.fresh ? 1 : lm.replay.end.next_lsn;
  h.journal_tail = lm.fresh ? 0 : lm.replay.end.head;
  h.next_ino = lm.model.next_ino;
  h.inode_count = lm.model.inodes.size();
  h.data_offset = g.data_offset;
  h.data_size = g.data_size;
  h.journal_salt = std::random_device{}();
  Status st = write_checkpoint(io, lm.layout, h, encode_checkpoint_body(lm.model));
  if (st) lm.header = h;
  return st;
}

namespace {

struct Ctx {
  Model& m;
  const Geometry& g;
  bool repair;
  FsckReport* r;
  void problem(const std::string& msg, bool fixable) {
    ++r->problems;
    if (repair && fixable) {
      ++r->fixed;
      r->messages.push_back(msg + " (fixed)");
    } else {
      r->messages.push_back(msg);
    }
  }
  void apply(const Delta& d) { m.apply(d, nullptr); }
  void put_attr(const InodeAttr& a) {
    Delta d;
    d.type = DeltaType::kInodePut;
    d.ino = a.ino;
    d.attr = a;
    apply(d);
  }
  void del_inode(Ino ino) {
    Delta d;
    d.type = DeltaType::kInodeDel;
    d.ino = ino;
    apply(d);
  }
  void del_entry(Ino dir, const std::string& name) {
    Delta d;
    d.type = DeltaType::kDirentDel;
    d.ino = dir;
    d.name = name;
    apply(d);
  }
  void put_entry(Ino dir, Ino child, uint64_t cookie, const std::string& name) {
    Delta d;
    d.type = DeltaType::kDirentPut;
    d.ino = dir;
    d.child = child;
    d.a = cookie;
    d.name = name;
    apply(d);
  }
};

std::string ino_s(Ino i) { return "inode " + std::to_string(i); }

std::string octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

// 7. POSIX ACLs: well-formed, default ACLs on directories only, and the
//    mode's permission bits what the access ACL grants. Releases before
//    ACLs were applied stored what cp -a and setfacl wrote without
//    setting the mode; the ACL is what those tools meant, so it wins.
void check_acls(Ctx& c) {
  for (Ino ino : c.m.sorted_inos()) {
    Inode* in = c.m.find(ino);
    for (std::string_view name : {kAclAccessXattr, kAclDefaultXattr}) {
      auto it = in->xattrs.find(name);
      if (it == in->xattrs.end()) continue;
      std::optional<PosixAcl> acl = PosixAcl::decode(it->second);
      if (!acl) {
        c.problem(ino_s(ino) + ": " + std::string(name) + " is not a valid ACL; removed", true);
        if (c.repair) c.apply(xattr_del(ino, name));
        continue;
      }
      if (name == kAclDefaultXattr && !in->is_dir()) {
        c.problem(ino_s(ino) + ": a default ACL on a non-directory; removed", true);
        if (c.repair) c.apply(xattr_del(ino, name));
        continue;
      }
      if (name != kAclAccessXattr) continue;
      uint32_t mode = in->attr.mode;
      const bool extends = acl->extends_mode(&mode);
      if (mode == in->attr.mode && extends) continue;
      if (mode == in->attr.mode) {
        c.problem(ino_s(ino) + ": an access ACL that only repeats the mode " + octal(mode) + "; removed", true);
      } else {
        c.problem(ino_s(ino) + ": mode " + octal(in->attr.mode) + " but its access ACL grants " + octal(mode) +
                      "; the mode follows the ACL",
                  true);
      }
      if (!c.repair) continue;
      InodeAttr a = in->attr;
      a.mode = mode;
      c.put_attr(a);
      if (!extends) c.apply(xattr_del(ino, name));
    }
  }
}

// 0. The inode counter must be past every inode (new inodes, including
//    lost+found below, take their number from it).
void check_inode_counter(Ctx& c) {
  Model& m = c.m;
  if (m.inodes.empty()) return;
  const Ino max_ino = m.sorted_inos().back();
  if (max_ino >= m.next_ino) {
    c.problem("inode counter " + std::to_string(m.next_ino) + " is not past " + ino_s(max_ino), true);
    m.next_ino = max_ino + 1;
  }
}

// What step 1 leaves for the steps after it.
struct Names {
  std::map<Ino, uint32_t> refs;   // names per inode
  std::map<Ino, Ino> dir_parent;  // the directory holding each directory's one name
};

// 1. Entries that name missing inodes; directories with several names.
Names check_entries(Ctx& c) {
  Model& m = c.m;
  Names n;
  for (Ino ino : m.sorted_inos()) {
    Inode* in = m.find(ino);
    if (!in->dir) continue;
    std::vector<std::pair<std::string, Ino>> entries;
    for (const auto& [name, e] : in->dir->names()) entries.push_back({name, e.ino});
    std::sort(entries.begin(), entries.end());
    for (const auto& [name, child] : entries) {
      Inode* cin = m.find(child);
      bool drop = false;
      if (!cin || child == kRootIno) {
        c.problem("entry '" + name + "' in directory " + std::to_string(ino) + " names missing " + ino_s(child), true);
        drop = true;
      } else if (cin->dir && n.dir_parent.count(child)) {
        c.problem("directory " + std::to_string(child) + " has a second name '" + name + "' in directory " +
                      std::to_string(ino),
                  true);
        drop = true;
      }
      if (drop) {
        if (c.repair) c.del_entry(ino, name);
        continue;
      }
      ++n.refs[child];
      if (cin->dir) n.dir_parent[child] = ino;
    }
  }
  return n;
}

// 2. Orphan list: unlinked-while-open inodes (normal after a crash).
void check_orphans(Ctx& c, const std::map<Ino, uint32_t>& refs) {
  Model& m = c.m;
  for (Ino o : std::vector<Ino>(m.orphans.begin(), m.orphans.end())) {
    const Inode* in = m.find(o);
    if (in && in->attr.nlink == 0 && !refs.count(o)) {
      c.r->messages.push_back("orphan " + ino_s(o) + " (unlinked while open) is freed" +
                              std::string(c.repair ? "" : " at next mount or repair"));
      if (c.repair) c.del_inode(o);
    } else {
      c.problem(ino_s(o) + " is on the orphan list but still linked", true);
      if (c.repair) {
        Delta d;
        d.type = DeltaType::kOrphanDel;
        d.ino = o;
        c.apply(d);
      }
    }
  }
}

// 3a. Every inode reachable from the root, not counting the names step 1
//     found to be a directory's second name.
std::set<Ino> reachable_from_root(const Model& m, const std::map<Ino, Ino>& dir_parent) {
  std::set<Ino> reached{kRootIno};
  std::deque<Ino> todo{kRootIno};
  while (!todo.empty()) {
    const Inode* in = m.find(todo.front());
    todo.pop_front();
    if (!in || !in->dir) continue;
    for (const auto& [name, e] : in->dir->names()) {
      auto parent = dir_parent.find(e.ino);
      if (parent != dir_parent.end() && parent->second != in->attr.ino) continue;  // dropped link
      if (m.find(e.ino) && reached.insert(e.ino).second) todo.push_back(e.ino);
    }
  }
  return reached;
}

// 3b. The /lost+found directory, made (or made again, when the name is
//     taken by something else) if need be. Repair only.
Ino lost_found_dir(Ctx& c, std::set<Ino>& reached) {
  Model& m = c.m;
  Inode* root = m.find(kRootIno);
  if (const DirEntryRef* e = root->dir->find("lost+found"); e && m.find(e->ino) && m.find(e->ino)->dir) {
    return e->ino;
  }
  InodeAttr a;
  a.ino = m.next_ino;
  a.generation = 1;
  a.mode = S_IFDIR | 0700;
  a.nlink = 2;
  a.atime_ns = a.mtime_ns = a.ctime_ns = root->attr.mtime_ns;
  c.put_attr(a);
  InodeAttr ra = root->attr;
  ++ra.nlink;
  c.put_attr(ra);
  if (root->dir->find("lost+found")) c.del_entry(kRootIno, "lost+found");
  c.put_entry(kRootIno, a.ino, root->dir->next_cookie(), "lost+found");
  reached.insert(a.ino);
  return a.ino;
}

// 3c. Names `ino` "#<ino>" in lost+found. Directories moved there may be
//     the top of an unreachable subtree: its inner nodes become reachable
//     with it.
void move_to_lost_found(Ctx& c, Ino lost_found, Ino ino, std::set<Ino>& reached) {
  Model& m = c.m;
  c.put_entry(lost_found, ino, m.find(lost_found)->dir->next_cookie(), "#" + std::to_string(ino));
  if (m.find(ino)->dir) {
    InodeAttr la = m.find(lost_found)->attr;
    ++la.nlink;
    c.put_attr(la);
  }
  std::deque<Ino> sub{ino};
  reached.insert(ino);
  while (!sub.empty()) {
    const Inode* s = m.find(sub.front());
    sub.pop_front();
    if (!s || !s->dir) continue;
    for (const auto& [n, e] : s->dir->names()) {
      if (reached.insert(e.ino).second) sub.push_back(e.ino);
    }
  }
}

// 3. Reachability from the root: an unreachable inode with no links is
//    freed, one with links goes to /lost+found.
void check_reachability(Ctx& c, const std::map<Ino, Ino>& dir_parent) {
  Model& m = c.m;
  std::set<Ino> reached = reachable_from_root(m, dir_parent);
  Ino lost_found = 0;
  for (Ino ino : m.sorted_inos()) {
    if (reached.count(ino) || m.orphans.count(ino)) continue;
    Inode* in = m.find(ino);
    const uint64_t bytes = in->extents.allocated_bytes();
    const std::string leak = bytes ? " holding " + std::to_string(bytes) + " bytes of leaked space" : "";
    if (in->attr.nlink == 0) {
      c.problem("unreachable " + ino_s(ino) + " with no links" + leak, true);
      if (c.repair) c.del_inode(ino);
      continue;
    }
    c.problem("unreachable " + ino_s(ino) + leak + "; moved to /lost+found", true);
    if (!c.repair) continue;
    if (!lost_found) lost_found = lost_found_dir(c, reached);
    move_to_lost_found(c, lost_found, ino, reached);
  }
}

// 4. Link counts (recount after the repairs above), and symlink sizes.
void check_link_counts(Ctx& c) {
  Model& m = c.m;
  std::map<Ino, uint32_t> names, subdirs;
  for (const auto& [ino, in] : m.inodes) {
    if (!in->dir) continue;
    for (const auto& [n, e] : in->dir->names()) {
      const Inode* cin = m.find(e.ino);
      if (!cin) continue;
      ++names[e.ino];
      if (cin->dir) ++subdirs[ino];
    }
  }
  for (Ino ino : m.sorted_inos()) {
    Inode* in = m.find(ino);
    if (m.orphans.count(ino)) continue;
    const uint32_t want = in->dir ? 2 + subdirs[ino] : names[ino];
    if (want == 0) continue;  // unreachable, reported above
    if (in->attr.nlink != want) {
      c.problem(
          ino_s(ino) + " has link count " + std::to_string(in->attr.nlink) + ", should be " + std::to_string(want),
          true);
      if (c.repair) {
        InodeAttr a = in->attr;
        a.nlink = want;
        c.put_attr(a);
      }
    }
    if (in->is_symlink() && in->attr.size != in->symlink.size()) {
      c.problem(ino_s(ino) + " symlink size " + std::to_string(in->attr.size) + " differs from its target length",
                true);
      if (c.repair) {
        InodeAttr a = in->attr;
        a.size = in->symlink.size();
        c.put_attr(a);
      }
    }
  }
}

// 5. Extents: inside the data area, no overlaps (the later inode loses
//    the overlapping part).
void check_extents(Ctx& c) {
  Model& m = c.m;
  const Geometry& g = c.g;
  struct Ext {
    uint64_t vol, len;
    Ino ino;
    uint64_t file_off;
  };
  std::vector<Ext> all;
  const uint64_t area_end = g.data_offset + g.data_size;
  for (Ino ino : m.sorted_inos()) {
    Inode* in = m.find(ino);
    std::vector<std::pair<uint64_t, uint64_t>> outside;
    for (const auto& [off, e] : in->extents.extents()) {
      if (e.vol_off < g.data_offset || e.vol_off + e.len > area_end) {
        outside.push_back({off, e.len});
        continue;
      }
      all.push_back({e.vol_off, e.len, ino, off});
    }
    for (const auto& [off, len] : outside) {
      c.problem(ino_s(ino) + " maps file offset " + std::to_string(off) + " outside the data area", true);
      if (c.repair) in->extents.remove(off, len, nullptr);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Ext& a, const Ext& b) { return a.vol < b.vol; });
  uint64_t prev_end = 0;
  Ino prev_ino = 0;
  for (const Ext& e : all) {
    const uint64_t end = e.vol + e.len;
    if (e.vol < prev_end) {
      const uint64_t ov_end = std::min(end, prev_end);
      c.problem("extent of " + ino_s(e.ino) + " at volume offset " + std::to_string(e.vol) + " overlaps " +
                    ino_s(prev_ino) + " for " + std::to_string(ov_end - e.vol) + " bytes",
                true);
      if (c.repair) m.find(e.ino)->extents.remove(e.file_off, ov_end - e.vol, nullptr);
    }
    if (end > prev_end) {
      prev_end = end;
      prev_ino = e.ino;
    }
  }
}

// 6. Free-space accounting: rebuilding the allocator from the extents
//    must account for every byte exactly once.
void account_space(Ctx& c) {
  const Geometry& g = c.g;
  Allocator alloc(g.data_offset, g.data_size, std::max<uint64_t>(g.stripe_width(), kBlockSize), kBlockSize);
  uint64_t marked = 0;
  bool clash = false;
  for (const auto& [ino, in] : c.m.inodes) {
    for (const auto& [off, e] : in->extents.extents()) {
      if (alloc.mark_used(e.vol_off, e.len)) {
        marked += e.len;
      } else {
        clash = true;
      }
    }
  }
  if (clash && c.repair) {
    c.problem("free-space map still inconsistent after repair", false);
  }
  c.r->messages.push_back("space: " + std::to_string(marked) + " bytes in use, " + std::to_string(alloc.free_bytes()) +
                          " free of " + std::to_string(g.data_size) +
                          (clash && !c.repair ? " (extents overlap: counts are approximate)" : ""));
}

}  // namespace

// The passes in order: each may repair what the ones after it count.
void check_model(Model& m, const Geometry& g, bool repair, FsckReport* report) {
  Ctx c{m, g, repair, report};
  check_inode_counter(c);
  const Names names = check_entries(c);
  check_orphans(c, names.refs);
  check_reachability(c, names.dir_parent);
  check_link_counts(c);
  check_extents(c);
  check_acls(c);
  account_space(c);
}

FsckReport run_fsck(VolumeIo& io, const Geometry& g, const FsckOptions& opt) {
  FsckReport r;
  for (const LostMember& lost : opt.lost) {
    if (lost.first_lost_row * g.stripe_width() < g.meta_offset + g.meta_size)
      r.messages.push_back("member " + lost.name + " (index " + std::to_string(lost.index) +
                           "): its end cuts into the metadata area: the journal and checkpoints on it are lost too");
  }
  auto lm = load_metadata(io, g, opt.journal_size);
  if (!lm) {
    r.messages.push_back("metadata: " + lm.status().message());
    r.problems = 1;
    r.exit_code = 4;
    return r;
  }
  for (const auto& n : lm->notes) r.messages.push_back(n);
  if (lm->fresh) {
    r.messages.push_back("metadata area is empty (fresh volume, never mounted)");
    return r;
  }
  const size_t orphans_before = lm->model.orphans.size();
  check_model(lm->model, g, opt.repair, &r);
  // Data on a member that ends early: not repairable here, but the user
  // must learn which files it takes with it.
  for (const LostMember& lost : opt.lost) {
    auto files = files_with_lost_data(lm->model, g, lost);
    ++r.problems;
    r.messages.push_back("member " + lost.name + " (index " + std::to_string(lost.index) +
                         ") is short: " + std::to_string(files.size()) +
                         " file(s) have data past its end, which is lost" + (files.empty() ? "" : ":"));
    for (const auto& [path, bytes] : files)
      r.messages.push_back("  lost: " + path + " (" + std::to_string(bytes) + " bytes on that member)");
  }
  const bool changed = r.fixed > 0 || (opt.repair && orphans_before > 0);
  if (opt.repair && changed) {
    Status st = store_metadata(io, g, *lm);
    if (!st) {
      r.messages.push_back("writing the repaired checkpoint failed: " + st.message());
      r.exit_code = 8;
      return r;
    }
    if (int rc = io.flush(); rc != 0) {
      r.messages.push_back("flush failed");
      r.exit_code = 8;
      return r;
    }
    r.messages.push_back("repaired state written as checkpoint " + std::to_string(lm->header.seq));
  }
  if (r.problems == 0) {
    r.exit_code = 0;
  } else if (r.fixed == r.problems) {
    r.exit_code = 1;
  } else {
    r.exit_code = 4;
  }
  return r;
}

}  // namespace peregrine::meta
