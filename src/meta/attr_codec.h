// Fixed 72-byte encoding of InodeAttr (without blocks), shared by journal
// records and checkpoints.
// Thread rules: pure functions; any thread.
#pragma once

#include "codec.h"
#include "peregrine/meta/types.h"

namespace peregrine::meta {

inline void encode_attr(codec::Writer& w, const InodeAttr& a) {
  w.u64(a.ino);
  w.u64(a.generation);
  w.u32(a.mode);
  w.u32(a.uid);
  w.u32(a.gid);
  w.u32(a.nlink);
  w.u64(a.size);
  w.u64(a.rdev);
  w.i64(a.atime_ns);
  w.i64(a.mtime_ns);
  w.i64(a.ctime_ns);
}

inline InodeAttr decode_attr(codec::Reader& r) {
  InodeAttr a;
  a.ino = r.u64();
  a.generation = r.u64();
  a.mode = r.u32();
  a.uid = r.u32();
  a.gid = r.u32();
  a.nlink = r.u32();
  a.size = r.u64();
  a.rdev = r.u64();
  a.atime_ns = r.i64();
  a.mtime_ns = r.i64();
  a.ctime_ns = r.i64();
  return a;
}

// Structural validity of decoded attributes (type known, ino non-zero).
bool attr_valid(const InodeAttr& a);

}  // namespace peregrine::meta
