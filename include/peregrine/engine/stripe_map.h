// StripeMap: RAID-0 geometry of the volume. The logical space is cut into
// stripe units; unit s lives on member s mod N at member offset
// data_start + (s div N) * unit. Immutable except that grow() may raise
// the end of the volume (peregrine grow on a mounted volume), which moves
// no piece, and that an online restripe onto more members (peregrine grow
// --add on a mounted volume, docs/format.md section 5b) lays the units
// below its cursor out over N + k members: between begin_restripe() and
// finish_restripe() unit s < cursor lives on member s mod (N + k) at
// data_start + (s div (N + k)) * unit, and the others where they were.
// Thread rules: callable from any thread. The restripe calls come from the
// engine's restripe, which orders them against the IO that could see the
// units change place (Engine::close_window); readers take whichever cursor
// they load.
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
      : members_(o.members()),
        unit_(o.unit_),
        shift_(o.shift_),
        data_start_(o.data_start_),
        member_data_size_(o.member_data_size()),
        new_members_(o.new_members_.load()),
        cursor_(o.cursor_.load()) {}
  StripeMap& operator=(const StripeMap& o) {
    members_.store(o.members());
    unit_ = o.unit_;
    shift_ = o.shift_;
    data_start_ = o.data_start_;
    member_data_size_.store(o.member_data_size());
    new_members_.store(o.new_members_.load());
    cursor_.store(o.cursor_.load());
    return *this;
  }

  // The members the volume's size counts: N until a restripe's
  // finish_restripe(), N + k after it.
  uint32_t members() const { return members_.load(std::memory_order_acquire); }
  uint32_t stripe_unit() const { return unit_; }
  uint64_t data_start() const { return data_start_; }
  uint64_t member_data_size() const { return member_data_size_.load(std::memory_order_acquire); }
  uint64_t volume_size() const { return member_data_size() * members(); }
  // The volume grew: its superblocks now record `member_data_size` (larger
  // than before, a multiple of the stripe unit). Requests past the old end
  // are accepted from now on.
  void grow(uint64_t member_data_size) { member_data_size_.store(member_data_size, std::memory_order_release); }

  // Online restripe. begin: units keep their places (cursor 0), and the
  // layout over `new_members` is ready for the units the cursor passes.
  // advance: every unit below `cursor` is in its new place. finish: every
  // unit is, and the volume counts new_members members.
  void begin_restripe(uint32_t new_members) {
    cursor_.store(0, std::memory_order_release);
    new_members_.store(new_members, std::memory_order_release);
  }
  void advance_restripe(uint64_t cursor_units) { cursor_.store(cursor_units, std::memory_order_release); }
  void finish_restripe() {
    const uint32_t n = new_members_.load(std::memory_order_acquire);
    if (n == 0) return;
    // Cursor at the end first: a reader that still sees the restripe then
    // places every unit as the finished layout does. One that sees the
    // restripe over, or the cursor back at 0, sees N + k members
    // (piece_at loads in the other order).
    cursor_.store(UINT64_MAX, std::memory_order_release);
    members_.store(n, std::memory_order_release);
    new_members_.store(0, std::memory_order_release);
    cursor_.store(0, std::memory_order_release);
  }
  // A restripe that moved nothing (cursor 0) given up: the old layout alone.
  void cancel_restripe() {
    new_members_.store(0, std::memory_order_release);
    cursor_.store(0, std::memory_order_release);
  }
  bool restriping() const { return new_members_.load(std::memory_order_acquire) != 0; }
  uint32_t restripe_members() const { return new_members_.load(std::memory_order_acquire); }
  uint64_t restripe_cursor() const { return cursor_.load(std::memory_order_acquire); }
  uint64_t unit_of(uint64_t offset) const { return offset >> shift_; }

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
    // new_members_ before the others: finish_restripe() stores it after
    // them, so a reader that finds the restripe over, or its cursor reset,
    // finds N + k members. (members_ first could give N for a moved unit.)
    uint32_t n = new_members_.load(std::memory_order_acquire);
    if (n == 0 || s >= cursor_.load(std::memory_order_acquire)) n = members_.load(std::memory_order_acquire);
    return StripePiece{static_cast<uint32_t>(s % n), data_start_ + (s / n) * unit_ + within, offset, len};
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
  // REQUIRES length > 0, and no restripe in progress (!restriping()).
  template <typename F>
  void member_spans(uint64_t offset, uint64_t length, F&& f) const {
    const uint64_t end = offset + length;
    const uint64_t s0 = offset >> shift_, s1 = (end - 1) >> shift_;
    const uint32_t n = members();
    for (uint32_t m = 0; m < n; ++m) {
      const uint64_t first = s0 + (m + n - s0 % n) % n;
      if (first > s1) continue;
      const uint64_t last = s1 - (s1 % n + n - m) % n;
      const uint64_t from = data_start_ + (first / n) * unit_ + (first == s0 ? (offset & (unit_ - 1)) : 0);
      const uint64_t to =
          data_start_ + (last / n) * unit_ + (last == s1 ? ((end - 1) & (unit_ - 1)) + 1 : unit_);
      f(m, from, to - from);
    }
  }

  // Inverse of piece_at (no restripe): the volume offset held at a member offset.
  uint64_t volume_offset(uint32_t member, uint64_t member_offset) const {
    uint64_t rel = member_offset - data_start_;
    uint64_t row = rel >> shift_;
    return ((row * members() + member) << shift_) + (rel & (unit_ - 1));
  }

 private:
  std::atomic<uint32_t> members_;
  uint32_t unit_;
  uint32_t shift_;
  uint64_t data_start_;
  std::atomic<uint64_t> member_data_size_;
  std::atomic<uint32_t> new_members_{0};  // N + k while restriping, else 0
  std::atomic<uint64_t> cursor_{0};       // units below it are in their new places
};

}  // namespace peregrine
