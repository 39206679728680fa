// Checkpoint header/body encoding, slot IO.
#include "peregrine/meta/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attr_codec.h"
#include "codec.h"
#include "peregrine/util/aligned_buffer.h"
#include "peregrine/util/crc32c.h"

namespace peregrine::meta {

namespace {
constexpr size_t kHeaderBytes = 128;  // checksummed part of the header block
constexpr uint64_t kChunk = 1 << 20;  // checkpoint IO size
}  // namespace

Status check_checkpoint_data_size(uint64_t recorded, uint64_t current) {
  if (recorded <= current) return Status::ok();
  return Status::error(EUCLEAN, "the checkpoint was written for a data area of " + std::to_string(recorded) +
                                    " bytes, larger than the volume's " + std::to_string(current) +
                                    " bytes: files may have data past its end. A member's superblocks record a "
                                    "smaller member data size than the volume had (restored from an old copy?); "
                                    "refusing rather than losing that data");
}

void encode_checkpoint_header(const CheckpointHeader& h, std::span<std::byte> block) {
  std::memset(block.data(), 0, block.size());
  std::string s;
  codec::Writer w(&s);
  w.u32(kCheckpointMagic);
  w.u16(kCheckpointVersion);
  w.u16(0);
  w.u32(0);  // header crc, patched
  w.u32(h.body_crc);
  w.u64(h.seq);
  w.u64(h.next_lsn);
  w.u64(h.journal_tail);
  w.u64(h.journal_size);
  w.u64(h.body_len);
  w.u64(h.next_ino);
  w.u64(h.inode_count);
  w.u64(h.data_offset);
  w.u64(h.data_size);
  w.u32(h.journal_salt);
  s.resize(kHeaderBytes, '\0');
  const uint32_t crc = crc32c(s.data(), s.size());
  codec::put_le32(reinterpret_cast<std::byte*>(s.data() + 8), crc);
  std::memcpy(block.data(), s.data(), s.size());
}

bool decode_checkpoint_header(std::span<const std::byte> block, CheckpointHeader* h) {
  if (block.size() < kHeaderBytes) return false;
  std::byte tmp[kHeaderBytes];
  std::memcpy(tmp, block.data(), kHeaderBytes);
  const uint32_t stored = codec::get_le32(tmp + 8);
  codec::put_le32(tmp + 8, 0);
  if (crc32c(tmp, kHeaderBytes) != stored) return false;
  codec::Reader r(std::span<const std::byte>(tmp, kHeaderBytes));
  if (r.u32() != kCheckpointMagic || r.u16() != kCheckpointVersion) return false;
  r.u16();
  r.u32();
  h->body_crc = r.u32();
  h->seq = r.u64();
  h->next_lsn = r.u64();
  h->journal_tail = r.u64();
  h->journal_size = r.u64();
  h->body_len = r.u64();
  h->next_ino = r.u64();
  h->inode_count = r.u64();
  h->data_offset = r.u64();
  h->data_size = r.u64();
  h->journal_salt = r.u32();
  return r.ok() && h->seq > 0;
}

std::string encode_checkpoint_body(const Model& m) {
  std::string s;
  s.reserve(m.inodes.size() * 128);
  codec::Writer w(&s);
  w.u64(m.inodes.size());
  for (Ino ino : m.sorted_inos()) {
    const Inode& in = *m.find(ino);
    encode_attr(w, in.attr);
    w.u16(static_cast<uint16_t>(in.symlink.size()));
    w.bytes(in.symlink);
    w.u32(static_cast<uint32_t>(in.xattrs.size()));
    for (const auto& [k, v] : in.xattrs) {
      w.u8(static_cast<uint8_t>(k.size()));
      w.bytes(k);
      w.u32(static_cast<uint32_t>(v.size()));
      w.bytes(v);
    }
    w.u32(static_cast<uint32_t>(in.extents.count()));
    for (const auto& [off, e] : in.extents.extents()) {
      w.u64(off);
      w.u64(e.vol_off);
      w.u64(e.len);
      w.u8(e.written ? 1 : 0);
    }
    if (in.dir) {
      w.u64(in.dir->next_cookie());
      w.u64(in.dir->size());
      for (auto it = in.dir->after(0); it != in.dir->end(); ++it) {
        w.u64(it->first);
        w.u64(it->second->second.ino);
        w.u8(static_cast<uint8_t>(it->second->first.size()));
        w.bytes(it->second->first);
      }
    }
  }
  w.u64(m.orphans.size());
  for (Ino o : m.orphans) w.u64(o);
  return s;
}

namespace {

// The decoders of one inode's parts: each returns what is wrong with it,
// empty when nothing is. A truncated body leaves the reader !ok(), for the
// caller to see.
std::string decode_xattrs(codec::Reader& r, Inode* node) {
  const uint32_t nx = r.u32();
  if (nx > r.remaining() / 6) return "xattr count out of range";
  for (uint32_t k = 0; k < nx && r.ok(); ++k) {
    const uint8_t nl = r.u8();
    std::string name = r.str(nl);
    const uint32_t vl = r.u32();
    if (nl == 0 || vl > kXattrValueMax) return "xattr malformed";
    node->xattrs[std::move(name)] = r.str(vl);
  }
  return {};
}

std::string decode_extents(codec::Reader& r, Inode* node) {
  const uint32_t ne = r.u32();
  if (ne > r.remaining() / 25) return "extent count out of range";
  if (ne && !node->is_reg()) return "extents on a non-regular inode";
  uint64_t prev_end = 0;
  for (uint32_t k = 0; k < ne && r.ok(); ++k) {
    const uint64_t off = r.u64(), vol = r.u64(), len = r.u64();
    const uint8_t f = r.u8();
    if (off % kBlockSize || vol % kBlockSize || len % kBlockSize || len == 0 || f > 1 || off < prev_end ||
        off + len < off || vol + len < vol)
      return "extent malformed in inode " + std::to_string(node->attr.ino);
    prev_end = off + len;
    node->extents.insert(off, vol, len, f == 1);
  }
  return {};
}

std::string decode_entries(codec::Reader& r, Inode* node) {
  node->dir = std::make_unique<Directory>();
  const uint64_t next_cookie = r.u64();
  const uint64_t n = r.u64();
  if (n > r.remaining() / 18) return "entry count out of range";
  node->dir->reserve(n);
  for (uint64_t k = 0; k < n && r.ok(); ++k) {
    const uint64_t cookie = r.u64();
    const uint64_t child = r.u64();
    const uint8_t nl = r.u8();
    std::string name = r.str(nl);
    if (!r.ok()) break;
    if (nl == 0 || cookie < kFirstDirCookie || cookie >= next_cookie || node->dir->find(name) ||
        name.find('/') != std::string::npos)
      return "directory entry malformed in inode " + std::to_string(node->attr.ino);
    node->dir->add(name, child, cookie);
  }
  node->dir->set_next_cookie(next_cookie);
  return {};
}

// Inode number `i` of the body into *node.
std::string decode_inode(codec::Reader& r, uint64_t i, Inode* node) {
  node->attr = decode_attr(r);
  if (!r.ok() || !attr_valid(node->attr)) return "inode " + std::to_string(i) + " invalid";
  const uint16_t tl = r.u16();
  if (tl > kSymlinkMax) return "symlink target too long";
  node->symlink = r.str(tl);
  if (!node->is_symlink() && tl) return "target on a non-symlink";
  if (std::string why = decode_xattrs(r, node); !why.empty()) return why;
  if (std::string why = decode_extents(r, node); !why.empty()) return why;
  if (node->is_dir()) return decode_entries(r, node);
  return {};
}

// Cross references: entries name existing inodes, directories have one
// parent, the root is a directory, orphans exist. Strict: any break is
// the problem returned; lenient (fsck's repair): dangling names and
// orphans are left out.
std::string link_inodes(Model& m, uint64_t next_ino, bool strict) {
  const Inode* root = m.find(kRootIno);
  if (!root || !root->is_dir()) return "no root directory";
  for (auto& [ino, in] : m.inodes) {
    if (ino >= next_ino && strict) return "inode " + std::to_string(ino) + " beyond next_ino";
    if (!in->dir) continue;
    for (const auto& [name, ref] : in->dir->names()) {
      Inode* c = m.find(ref.ino);
      if (!c || ref.ino == kRootIno) {
        if (strict) return "entry " + name + " names a missing inode";
        continue;
      }
      if (c->dir && c->parent != 0 && strict) return "directory " + std::to_string(ref.ino) + " has two parents";
      if (c->parent == 0) c->parent = ino;  // a file's: the hint of Inode::parent
    }
  }
  m.find(kRootIno)->parent = kRootIno;
  for (auto it = m.orphans.begin(); it != m.orphans.end();) {
    if (m.find(*it)) {
      ++it;
    } else if (strict) {
      return "orphan " + std::to_string(*it) + " is missing";
    } else {
      it = m.orphans.erase(it);
    }
  }
  return {};
}

}  // namespace

Expected<Model> decode_checkpoint_body(std::span<const std::byte> body, uint64_t next_ino, bool strict) {
  auto bad = [strict](const std::string& why) {
    return Status::error(EUCLEAN, "checkpoint body: " + why + (strict ? "; run fsck" : ""));
  };
  codec::Reader r(body);
  Model m;
  const uint64_t count = r.u64();
  // Every inode takes at least 72 + 2 + 4 + 4 bytes: refuse absurd counts
  // before reserving memory for them.
  if (!r.ok() || count > body.size() / 82) return bad("inode count out of range");
  m.inodes.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    auto node = std::make_unique<Inode>();
    if (std::string why = decode_inode(r, i, node.get()); !why.empty()) return bad(why);
    if (!r.ok()) break;
    const Ino ino = node->attr.ino;
    if (!m.inodes.emplace(ino, std::move(node)).second) return bad("duplicate inode " + std::to_string(ino));
  }
  const uint64_t norphans = r.u64();
  if (!r.ok() || norphans > r.remaining() / 8) return bad("truncated");
  for (uint64_t k = 0; k < norphans; ++k) m.orphans.insert(r.u64());
  if (!r.ok() || r.remaining() != 0) return bad("truncated or trailing bytes");
  if (std::string why = link_inodes(m, next_ino, strict); !why.empty()) return bad(why);
  m.next_ino = next_ino;
  // Not body.size(): decoding merges adjacent extents an older writer may
  // have kept apart, and the lenient decode drops what it cannot use.
  m.recount_body_bytes();
  return m;
}

Status write_checkpoint(VolumeIo& io, const MetaLayout& l, CheckpointHeader h, const std::string& body) {
  if (body.size() > l.max_body())
    return Status::error(ENOSPC, "checkpoint of " + std::to_string(body.size()) +
                                     " bytes does not fit a checkpoint slot of " + std::to_string(l.max_body()) +
                                     " bytes; the metadata area is too small for this many files");
  const uint64_t slot = l.slot_off[h.seq % 2];
  h.body_len = body.size();
  h.body_crc = crc32c(body.data(), body.size());
  h.journal_size = l.journal_size;
  AlignedBuffer chunk(std::min<uint64_t>(kChunk, (body.size() + kBlockSize - 1) / kBlockSize * kBlockSize));
  for (uint64_t done = 0; done < body.size(); done += kChunk) {
    const uint64_t n = std::min<uint64_t>(kChunk, body.size() - done);
    const uint64_t padded = (n + kBlockSize - 1) / kBlockSize * kBlockSize;
    std::memcpy(chunk.data(), body.data() + done, n);
    std::memset(chunk.data() + n, 0, padded - n);
    if (int rc = io.write(slot + 4096 + done, chunk.span().first(padded)); rc != 0)
      return Status::error(-rc, "checkpoint body write failed");
  }
  if (int rc = io.flush(); rc != 0) return Status::error(-rc, "flush before checkpoint header failed");
  AlignedBuffer hb(4096);
  encode_checkpoint_header(h, hb.span());
  if (int rc = io.write(slot, hb.span()); rc != 0) return Status::error(-rc, "checkpoint header write failed");
  if (int rc = io.flush(); rc != 0) return Status::error(-rc, "flush after checkpoint header failed");
  return Status::ok();
}

SlotState read_checkpoint_header(VolumeIo& io, const MetaLayout& l, int slot) {
  SlotState st;
  AlignedBuffer hb(4096);
  if (int rc = io.read(l.slot_off[slot], hb.span()); rc != 0) {
    st.problem = "header read failed (errno " + std::to_string(-rc) + ")";
    return st;
  }
  st.empty = std::all_of(hb.data(), hb.data() + 4096, [](std::byte b) { return b == std::byte{0}; });
  if (st.empty) {
    st.problem = "never written";
    return st;
  }
  if (!decode_checkpoint_header(hb.span(), &st.header)) {
    st.problem = "header checksum or magic wrong";
    return st;
  }
  if (st.header.seq % 2 != static_cast<uint64_t>(slot) || st.header.body_len > l.max_body()) {
    st.problem = "header does not belong in this slot";
    return st;
  }
  st.valid = true;
  return st;
}

void read_checkpoint_body(VolumeIo& io, const MetaLayout& l, int slot, SlotState* st) {
  const uint64_t len = st->header.body_len;
  const uint64_t padded = (len + kBlockSize - 1) / kBlockSize * kBlockSize;
  st->valid = false;
  st->body.resize(len);
  AlignedBuffer chunk(std::min<uint64_t>(kChunk, std::max<uint64_t>(padded, kBlockSize)));
  uint32_t crc = 0;
  for (uint64_t done = 0; done < padded; done += kChunk) {
    const uint64_t n = std::min<uint64_t>(kChunk, padded - done);
    if (int rc = io.read(l.slot_off[slot] + 4096 + done, chunk.span().first(n)); rc != 0) {
      st->problem = "body read failed";
      st->body.clear();
      return;
    }
    const uint64_t take = std::min<uint64_t>(n, len - done);
    crc = crc32c(chunk.data(), take, crc);
    std::memcpy(st->body.data() + done, chunk.data(), take);
  }
  if (crc != st->header.body_crc) {
    st->problem = "body checksum wrong (torn or overwritten checkpoint)";
    st->body.clear();
    return;
  }
  st->valid = true;
}

SlotState read_checkpoint_slot(VolumeIo& io, const MetaLayout& l, int slot) {
  SlotState st = read_checkpoint_header(io, l, slot);
  if (st.valid) read_checkpoint_body(io, l, slot, &st);
  return st;
}

int newest_valid_checkpoint(VolumeIo& io, const MetaLayout& l, SlotState states[2]) {
  states[0] = read_checkpoint_header(io, l, 0);
  states[1] = read_checkpoint_header(io, l, 1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int best = -1;
    for (int s = 0; s < 2; ++s) {
      if (states[s].valid && (best < 0 || states[s].header.seq > states[best].header.seq)) best = s;
    }
    if (best < 0) return -1;
    if (states[best].body.size() == states[best].header.body_len && !states[best].body.empty()) return best;
    read_checkpoint_body(io, l, best, &states[best]);
    if (states[best].valid) return best;
  }
  return -1;
}

}  // namespace peregrine::meta
