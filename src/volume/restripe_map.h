// Where each stripe unit of the data area sits before and after a restripe
// onto more members (`peregrine grow --add`), and how far the next window
// of the move may reach without overwriting a unit that is not yet moved.
// docs/format.md, section 5b. Internal to peregrine_volume.
// Thread rules: pure functions on plain values, any thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace peregrine {

struct RestripeMap {
  uint32_t old_count = 0;  // N
  uint32_t new_count = 0;  // N + k
  uint64_t unit = 0;       // stripe unit, bytes
  uint64_t data_start = 0;
  uint64_t rows = 0;  // member_data_size / unit

  struct Place {
    uint32_t member = 0;
    uint64_t offset = 0;  // member byte offset of the unit
  };

  // Logical stripe unit u in the old layout and in the new one.
  Place old_place(uint64_t u) const { return {uint32_t(u % old_count), data_start + u / old_count * unit}; }
  Place new_place(uint64_t u) const { return {uint32_t(u % new_count), data_start + u / new_count * unit}; }

  // Units to move: every unit of the old logical space.
  uint64_t end() const { return rows * old_count; }

  // The unit the old layout keeps where unit u goes, if any; u itself
  // when it does not move (row 0 of the old members).
  bool displaces(uint64_t u, uint64_t* v) const {
    const uint64_t m = u % new_count;
    if (m >= old_count) return false;  // a new member: nothing there yet
    *v = u / new_count * old_count + m;
    return true;
  }

  // The end of the window that starts at `cursor` (every unit below it is
  // moved and durable): the longest run, at most `max_units`, whose units
  // only overwrite units below `cursor` (or themselves). Since a unit's old
  // occupant is never after it, such a window always holds `cursor` itself,
  // and grows with the cursor: about cursor x k / N units.
  uint64_t window_end(uint64_t cursor, uint64_t max_units) const {
    const uint64_t stop = std::min(end(), cursor + std::max<uint64_t>(max_units, 1));
    uint64_t u = cursor;
    for (; u < stop; ++u) {
      uint64_t v = 0;
      if (displaces(u, &v) && v != u && v >= cursor) break;
    }
    return u;
  }
};

}  // namespace peregrine
