// Journal record (transaction) encoding and checked decoding.
#include "peregrine/meta/records.h"

#include <sys/stat.h>

#include "attr_codec.h"
#include "codec.h"

namespace peregrine::meta {

namespace {
// A record never holds more than this many deltas or bytes; decode refuses
// larger claims before allocating anything.
constexpr uint32_t kMaxRecordBytes = 1u << 24;
}  // namespace

bool attr_valid(const InodeAttr& a) {
  if (a.ino == 0) return false;
  switch (a.mode & S_IFMT) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFIFO:
    case S_IFSOCK:
    case S_IFCHR:
    case S_IFBLK: break;
    default: return false;
  }
  return (a.mode & ~(S_IFMT | 07777u)) == 0;
}

void encode_txn(const Txn& txn, std::string* out) {
  codec::Writer w(out);
  const size_t len_at = out->size();
  w.u32(0);  // patched below
  w.u32(static_cast<uint32_t>(txn.size()));
  for (const Delta& d : txn) {
    w.u8(static_cast<uint8_t>(d.type));
    switch (d.type) {
      case DeltaType::kInodePut:
        encode_attr(w, d.attr);
        w.u16(static_cast<uint16_t>(d.name.size()));
        w.bytes(d.name);
        break;
      case DeltaType::kInodeDel:
      case DeltaType::kOrphanAdd:
      case DeltaType::kOrphanDel: w.u64(d.ino); break;
      case DeltaType::kDirentPut:
        w.u64(d.ino);
        w.u64(d.child);
        w.u64(d.a);
        w.u8(static_cast<uint8_t>(d.name.size()));
        w.bytes(d.name);
        break;
      case DeltaType::kDirentDel:
      case DeltaType::kXattrDel:
        w.u64(d.ino);
        w.u8(static_cast<uint8_t>(d.name.size()));
        w.bytes(d.name);
        break;
      case DeltaType::kXattrPut:
        w.u64(d.ino);
        w.u8(static_cast<uint8_t>(d.name.size()));
        w.bytes(d.name);
        w.u32(static_cast<uint32_t>(d.value.size()));
        w.bytes(d.value);
        break;
      case DeltaType::kExtentMap:
        w.u64(d.ino);
        w.u64(d.a);
        w.u64(d.b);
        w.u64(d.c);
        w.u8(d.written ? 1 : 0);
        break;
      case DeltaType::kExtentUnmap:
        w.u64(d.ino);
        w.u64(d.a);
        w.u64(d.c);
        break;
      case DeltaType::kExtentWritten:
        w.u64(d.ino);
        w.u64(d.a);
        w.u64(d.b);
        w.u64(d.c);
        break;
    }
  }
  codec::put_le32(reinterpret_cast<std::byte*>(out->data() + len_at), static_cast<uint32_t>(out->size() - len_at - 4));
}

bool decode_txn(std::span<const std::byte> bytes, size_t* pos, Txn* txn) {
  codec::Reader hdr(bytes, *pos);
  const uint32_t len = hdr.u32();
  if (!hdr.ok() || len > kMaxRecordBytes || len < 4 || hdr.remaining() < len) return false;
  const size_t end = hdr.pos() + len;
  codec::Reader r(bytes.first(end), hdr.pos());
  const uint32_t count = r.u32();
  if (count > len) return false;  // each delta takes at least one byte
  txn->clear();
  txn->reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Delta d;
    const uint8_t type = r.u8();
    d.type = static_cast<DeltaType>(type);
    switch (d.type) {
      case DeltaType::kInodePut: {
        d.attr = decode_attr(r);
        d.ino = d.attr.ino;
        const uint16_t n = r.u16();
        if (n > kSymlinkMax) return false;
        d.name = r.str(n);
        if (r.ok() && !attr_valid(d.attr)) return false;
        break;
      }
      case DeltaType::kInodeDel:
      case DeltaType::kOrphanAdd:
      case DeltaType::kOrphanDel: d.ino = r.u64(); break;
      case DeltaType::kDirentPut: {
        d.ino = r.u64();
        d.child = r.u64();
        d.a = r.u64();
        const uint8_t n = r.u8();
        d.name = r.str(n);
        if (n == 0 || d.a < kFirstDirCookie) return false;
        break;
      }
      case DeltaType::kDirentDel:
      case DeltaType::kXattrDel: {
        d.ino = r.u64();
        const uint8_t n = r.u8();
        d.name = r.str(n);
        if (n == 0) return false;
        break;
      }
      case DeltaType::kXattrPut: {
        d.ino = r.u64();
        const uint8_t n = r.u8();
        d.name = r.str(n);
        const uint32_t v = r.u32();
        if (n == 0 || v > kXattrValueMax) return false;
        d.value = r.str(v);
        break;
      }
      case DeltaType::kExtentMap: {
        d.ino = r.u64();
        d.a = r.u64();
        d.b = r.u64();
        d.c = r.u64();
        const uint8_t f = r.u8();
        if (f > 1) return false;
        d.written = f == 1;
        break;
      }
      case DeltaType::kExtentUnmap:
        d.ino = r.u64();
        d.a = r.u64();
        d.c = r.u64();
        break;
      case DeltaType::kExtentWritten:
        d.ino = r.u64();
        d.a = r.u64();
        d.b = r.u64();
        d.c = r.u64();
        break;
      default: return false;
    }
    if (d.type >= DeltaType::kExtentMap && d.type <= DeltaType::kExtentWritten) {
      // Block-aligned, non-empty, no wrap-around.
      if (d.a % kBlockSize || d.b % kBlockSize || d.c % kBlockSize || d.c == 0 || d.a + d.c < d.a || d.b + d.c < d.b)
        return false;
    }
    txn->push_back(std::move(d));
  }
  if (!r.ok() || r.pos() != end) return false;
  *pos = end;
  return true;
}

}  // namespace peregrine::meta
