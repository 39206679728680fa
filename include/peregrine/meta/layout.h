// How the metadata area [meta_offset, meta_offset + meta_size) is split:
//
//   [0, J)            journal ring (J = journal_size)
//   [J, J + S)        checkpoint slot 0   (S = slot_size)
//   [J + S, J + 2S)   checkpoint slot 1
//
// Default J = meta_size / 4 rounded down to 4 KiB, clamped to
// [1 MiB, 256 MiB]; S = (meta_size - J) / 2 rounded down to 4 KiB. Each slot
// starts with a 4 KiB header block followed by the checkpoint body, so the
// largest checkpoint body is S - 4096 bytes (a checkpoint that would not fit
// is refused with ENOSPC and a message). Pure values.
// Thread rules: none; any thread.
#pragma once

#include <cstdint>

#include "peregrine/meta/types.h"
#include "peregrine/util/result.h"

namespace peregrine::meta {

struct MetaLayout {
  uint64_t journal_off = 0;  // absolute volume offsets
  uint64_t journal_size = 0;
  uint64_t slot_off[2] = {0, 0};
  uint64_t slot_size = 0;
  uint64_t max_body() const { return slot_size - 4096; }

  // journal_size 0 = default. Refuses a too small or misaligned area.
  static Expected<MetaLayout> compute(const Geometry& g, uint64_t journal_size = 0);
};

}  // namespace peregrine::meta
