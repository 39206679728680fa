// Copying byte ranges of one member to the same offsets of another, and
// checking the copy: the data mover of `peregrine replace`.
//
// copy() reads the source in chunks (O_DIRECT, as MemberFile opens it) and
// writes each chunk to the target while the next ones are read: an
// io_uring ring keeps several chunks in flight, so reading and writing
// overlap. A CRC32C of every chunk is taken as it is read; verify() reads
// the target back and compares. A regular-file source is copied sparsely:
// its holes (SEEK_DATA / SEEK_HOLE) are not read but zeroed on the target
// in place (a punched hole in a file, BLKZEROOUT on a device), so a sparse
// member stays sparse. With a member on tmpfs the chunks go one by one
// through plain system calls instead: io_uring would hand each to a kernel
// worker, and their memory copies slow each other. Nothing here syncs: the caller fdatasyncs the
// target between copy() and verify().
//
// Thread rules: one thread. A MemberCopy is used by the thread that made
// it; the progress callback runs on that thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "peregrine/backend/member_file.h"
#include "peregrine/util/result.h"

namespace peregrine {

struct CopyRange {
  uint64_t begin = 0;  // member offsets, multiples of 4096
  uint64_t end = 0;
};

struct CopyTuning {
  // 1 MiB x 8 measured best for file members on ext4 (docs/performance.md).
  uint32_t chunk_bytes = 1 << 20;  // one IO, a multiple of 4096
  uint32_t chunks_in_flight = 8;   // buffers (and so memory: chunk x this)
};

// (bytes done, bytes in total) of the current pass: the bytes read, so
// holes (zeroed before the data is copied) do not count.
using CopyProgressFn = std::function<void(uint64_t done, uint64_t total)>;

class MemberCopy {
 public:
  // Both members stay owned by the caller and must outlive this object.
  MemberCopy(const MemberFile& from, const MemberFile& to, CopyTuning tuning = {});

  // Copies every range of `from` to the same offsets of `to`. Errors name
  // the member and the offset.
  Status copy(std::span<const CopyRange> ranges, const CopyProgressFn& progress);

  // Only reads the ranges of `from` and takes their checksums, as copy()
  // does, for a verify() of a `to` that should already hold the same bytes.
  Status checksum(std::span<const CopyRange> ranges, const CopyProgressFn& progress);

  // Reads back what copy() wrote and compares it with the checksums taken
  // of the source: data chunks by CRC32C, holes must read as zeros (a hole
  // that `to` keeps as a hole is not read). A difference fails with
  // EBADMSG (an IO error with its own errno). REQUIRES: copy() or
  // checksum() succeeded.
  Status verify(const CopyProgressFn& progress);

  uint64_t data_bytes() const { return data_bytes_; }  // read from the source
  uint64_t hole_bytes() const { return hole_bytes_; }  // zeroed on the target, not read

 private:
  struct Piece {
    uint64_t offset = 0;
    uint32_t length = 0;
    uint32_t crc = 0;  // of the source's bytes, filled by copy()
  };

  Status plan(std::span<const CopyRange> ranges);
  Status read_source(std::span<const CopyRange> ranges, bool write, const CopyProgressFn& progress);
  void add_data(uint64_t begin, uint64_t end);

  const MemberFile& from_;
  const MemberFile& to_;
  CopyTuning tuning_;
  std::vector<Piece> pieces_;     // data, chunk-sized, in offset order
  std::vector<CopyRange> holes_;  // zeroed on the target instead of copied
  uint64_t data_bytes_ = 0;
  uint64_t hole_bytes_ = 0;
  bool copied_ = false;
};

// The data segments of a regular file within [begin, end), from
// SEEK_DATA / SEEK_HOLE, widened to 4 KiB; for a block device (or a
// filesystem that cannot tell) the whole range. Any thread.
Expected<std::vector<CopyRange>> data_segments(const MemberFile& member, uint64_t begin, uint64_t end);

}  // namespace peregrine
