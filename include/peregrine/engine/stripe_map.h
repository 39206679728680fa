// StripeMap: RAID-0 geometry of the volume. The logical space is cut into
// stripe units; unit s lives on member s mod N at member offset
// data_start + (s div N) * unit. Immutable except that grow() may raise
// the end of the volume (peregrine grow on a mounted volume), which moves
// no piece.
// Thread rules: callable from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace peregrine {

struct StripePiece {
  uint32_t member;
  uint64_t member_offset;  // absolute byte offset in the member
  uint64_t volume_offset;
  uint64_t length;
};

class StripeMap {
 public:
  // REQUIRES: members >= 1, stripe_unit a power of two,
  // member_data_size a multiple of stripe_unit.
  StripeMap(uint32_t members, uint32_t stripe_unit, uint64_t data_start, uint64_t member_data_size);
  StripeMap(const StripeMap& o)
      : members_(o.members_),
        unit_(o.unit_),
        shift_(o.shift_),
        data_start_(o.data_start_),
        member_data_size_(o.member_data_size()) {}
  StripeMap& operator=(const StripeMap& o) {
    members_ = o.members_;
    unit_ = o.unit_;
    shift_ = o.shift_;
    data_start_ = o.data_start_;
    member_data_size_.store(o.member_data_size());
    return *this;
  }

  uint32_t members() const { return members_; }
  uint32_t stripe_unit() const { return unit_; }
  uint64_t data_start() const { return data_start_; }
  uint64_t member_data_size() const { return member_data_size_.load(std::memory_order_acquire); }
  uint64_t volume_size() const { return member_data_size() * members_; }
  // The volume grew: its superblocks now record `member_data_size` (larger
  // than before, a multiple of the stripe unit). Requests past the old end
  // are accepted from now on.
  void grow(uint64_t member_data_size) { member_data_size_.store(member_data_size, std::memory_order_release); }

  // Number of pieces [offset, offset + length) splits into. REQUIRES length > 0.
  uint64_t piece_count(uint64_t offset, uint64_t length) const {
    return ((offset + length - 1) >> shift_) - (offset >> shift_) + 1;
  }

  // The piece that starts at `offset` and runs at most `length` bytes,
  // ending at the stripe-unit boundary.
  StripePiece piece_at(uint64_t offset, uint64_t length) const {
    uint64_t s = offset >> shift_;
    uint64_t within = offset & (unit_ - 1);
    uint64_t len = unit_ - within;
    if (len > length) len = length;
    return StripePiece{static_cast<uint32_t>(s % members_), data_start_ + (s / members_) * unit_ + within, offset, len};
  }

  // Calls f(piece) for each piece of the range, in volume order.
  template <typename F>
  void split(uint64_t offset, uint64_t length, F&& f) const {
    while (length > 0) {
      StripePiece p = piece_at(offset, length);
      f(p);
      offset += p.length;
      length -= p.length;
    }
  }

  // Calls f(member, member_offset, length) once for each member that
  // [offset, offset + length) touches: on each member the range covers one
  // contiguous member range (whole stripe units between its first and last
  // piece), which is what a discard of the range sends to that member.
  // REQUIRES length > 0.
  template <typename F>
  void member_spans(uint64_t offset, uint64_t length, F&& f) const {
    const uint64_t end = offset + length;
    const uint64_t s0 = offset >> shift_, s1 = (end - 1) >> shift_;
    for (uint32_t m = 0; m < members_; ++m) {
      const uint64_t first = s0 + (m + members_ - s0 % members_) % members_;
      if (first > s1) continue;
      const uint64_t last = s1 - (s1 % members_ + members_ - m) % members_;
      const uint64_t from = data_start_ + (first / members_) * unit_ + (first == s0 ? (offset & (unit_ - 1)) : 0);
      const uint64_t to =
          data_start_ + (last / members_) * unit_ + (last == s1 ? ((end - 1) & (unit_ - 1)) + 1 : unit_);
      f(m, from, to - from);
    }
  }

  // Inverse of piece_at: the volume offset held at a member offset.
  uint64_t volume_offset(uint32_t member, uint64_t member_offset) const {
    uint64_t rel = member_offset - data_start_;
    uint64_t row = rel >> shift_;
    return ((row * members_ + member) << shift_) + (rel & (unit_ - 1));
  }

 private:
  uint32_t members_;
  uint32_t unit_;
  uint32_t shift_;
  uint64_t data_start_;
  std::atomic<uint64_t> member_data_size_;
};

}  // namespace peregrine
