// Adding members (restripe_volume): the move order of restripe_map.h never
// overwrites a unit that is not yet moved; a volume restriped from N onto
// N + k members holds every logical byte it held (holes of sparse members
// stay zero); a restripe stopped after every superblock copy, and after
// every window's writes before their sync, leaves every logical unit
// readable from the place its cursor says, refuses a normal assembly, and
// finishes when run again; bad new members are refused with nothing written.
#include "peregrine/volume/restripe.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include "peregrine/volume/assembly.h"
#include "peregrine/volume/member_superblocks.h"
#include "restripe_map.h"
#include "restripe_state.h"
#include "volume_test_util.h"

namespace peregrine::test {
namespace {

constexpr uint64_t kUnit = 64 * 1024;
constexpr uint64_t kStart = 1 << 20;

// Thrown by the hooks: stops restripe_volume where a crash would, with
// what was written so far on disk.
struct Stop {};

// The logical content: unit u filled with a pattern naming u, except every
// fifth unit, a hole that must read as zeros.
bool is_hole_unit(uint64_t u) { return u % 5 == 3; }
std::string unit_bytes(uint64_t u) {
  std::string s(kUnit, '\0');
  if (is_hole_unit(u)) return s;
  for (size_t i = 0; i < s.size(); i += 8) std::snprintf(&s[i], 9, "%07llu", static_cast<unsigned long long>(u));
  return s;
}

class RestripeTest : public VolumeTest {
 protected:
  // A volume of `n` members with `rows` stripe rows and a small metadata
  // area (one row), made by writing its superblocks: mkfs's minimum
  // metadata area would make every step test slow.
  void make_volume(uint32_t n, uint64_t rows) {
    rows_ = rows;
    members_ = make_files("m", static_cast<int>(n), kStart + rows * kUnit);
    Superblock sb;
    sb.volume_uuid = *Uuid::random();
    for (uint32_t i = 0; i < n; ++i) sb.member_uuids.push_back(*Uuid::random());
    sb.stripe_unit = kUnit;
    sb.data_start = kStart;
    sb.member_data_size = rows * kUnit;
    sb.meta_size = kUnit * n;
    sb.creation_time = 1;
    for (uint32_t i = 0; i < n; ++i) {
      sb.member_index = i;
      sb.member_uuid = sb.member_uuids[i];
      auto f = MemberFile::open(members_[i], MemberFile::Mode::read_write);
      ASSERT_TRUE(f) << f.status().message();
      ASSERT_TRUE(write_superblock_copy(*f, sb, kPrimarySuperblockOffset));
      ASSERT_TRUE(write_superblock_copy(*f, sb, kBackupSuperblockOffset));
    }
    RestripeMap old{n, n, kUnit, kStart, rows};
    for (uint64_t u = 0; u < rows * n; ++u)
      if (!is_hole_unit(u)) write_bytes(members_[old.old_place(u).member], old.old_place(u).offset, unit_bytes(u));
  }

  std::vector<std::string> all() const {
    std::vector<std::string> a = members_;
    a.insert(a.end(), new_.begin(), new_.end());
    return a;
  }

  Expected<RestripeResult> restripe(std::function<void(int)> after_step = {}, std::function<void()> written = {}) {
    RestripeOptions o;
    o.progress = [this](uint64_t done, uint64_t total) { progress_ = {done, total}; };
    o.members = members_;
    o.new_members = new_;
    o.max_window_bytes = 4 * kUnit;
    o.after_step = std::move(after_step);
    o.after_window_written = std::move(written);
    return restripe_volume(o);
  }

  // Every logical unit read where `cursor` says it is: moved units from
  // their new place, the others from the old one.
  void expect_units(uint32_t n_old, uint32_t n_new, uint64_t cursor, const std::string& when) {
    RestripeMap map{n_old, n_new, kUnit, kStart, rows_};
    const std::vector<std::string> paths = all();
    for (uint64_t u = 0; u < map.end(); ++u) {
      auto p = u < cursor ? map.new_place(u) : map.old_place(u);
      ASSERT_EQ(read_bytes(paths[p.member], p.offset, kUnit), unit_bytes(u))
          << "unit " << u << " (" << (u < cursor ? "moved" : "not moved") << ", cursor " << cursor << ") " << when;
    }
  }

  // After a stop: the volume is either untouched (old layout, assembles
  // as before) or refuses assembly as an interrupted restripe whose
  // recorded cursor places every unit correctly.
  void expect_consistent(uint32_t n_old, uint32_t n_new, const std::string& when) {
    auto vol = assemble(members_, MemberFile::Mode::read_only);
    if (vol) {
      EXPECT_EQ(vol->superblock.member_count(), n_old) << when;
      vol = Status::error(0, "");  // unlock
      expect_units(n_old, n_old, 0, when);
      return;
    }
    if (vol.status().errnum() == ENODEV) {  // stopped after the very last copy: done
      expect_finished(n_new);
      return;
    }
    ASSERT_EQ(vol.status().errnum(), EINPROGRESS) << vol.status().message() << " " << when;
    EXPECT_MENTIONS(vol.status(), "peregrine grow --add");
    uint64_t cursor = 0;
    {
      auto st = assemble_restripe(all());
      ASSERT_TRUE(st) << st.status().message() << " " << when;
      cursor = st->sb.restripe_cursor;
    }
    expect_units(n_old, n_new, cursor, when);
  }

  void expect_finished(uint32_t n_new) {
    auto vol = assemble(all(), MemberFile::Mode::read_only);
    ASSERT_TRUE(vol) << vol.status().message();
    EXPECT_EQ(vol->superblock.member_count(), n_new);
    EXPECT_FALSE(vol->superblock.restriping());
    EXPECT_EQ(vol->superblock.member_data_size, rows_ * kUnit);
    EXPECT_TRUE(vol->damaged_copies.empty());
    vol = Status::error(0, "");
    RestripeMap map{static_cast<uint32_t>(members_.size()), n_new, kUnit, kStart, rows_};
    expect_units(map.old_count, n_new, map.end(), "after the restripe");
  }

  std::vector<std::string> members_, new_;
  uint64_t rows_ = 0;
  std::pair<uint64_t, uint64_t> progress_;  // the last (done, total)
};

TEST(RestripeMapTest, WindowsNeverOverwriteAUnitNotYetMoved) {
  for (uint32_t n = 1; n <= 5; ++n)
    for (uint32_t k = 1; k <= 4; ++k) {
      RestripeMap map{n, n + k, 1, 0, 40};
      // Slot contents by (member, row): which logical unit is there.
      std::map<std::pair<uint32_t, uint64_t>, uint64_t> at;
      for (uint64_t u = 0; u < map.end(); ++u) at[{map.old_place(u).member, map.old_place(u).offset}] = u;
      uint64_t cursor = 0, windows = 0;
      while (cursor < map.end()) {
        const uint64_t end = map.window_end(cursor, 1000);
        ASSERT_GT(end, cursor);
        for (uint64_t u = cursor; u < end; ++u) {
          auto dst = map.new_place(u);
          auto it = at.find({dst.member, dst.offset});
          if (it != at.end()) {
            ASSERT_TRUE(it->second < cursor || it->second == u)
                << n << "->" << n + k << ": unit " << u << " overwrites unit " << it->second << " not yet moved";
          }
        }
        for (uint64_t u = cursor; u < end; ++u) at[{map.new_place(u).member, map.new_place(u).offset}] = u;
        cursor = end;
        ++windows;
      }
      for (uint64_t u = 0; u < map.end(); ++u) ASSERT_EQ((at[{map.new_place(u).member, map.new_place(u).offset}]), u);
      EXPECT_LT(windows, map.end()) << "windows grow with the cursor";
    }
}

TEST_F(RestripeTest, TwoOntoFourKeepsEveryByte) {
  make_volume(2, 32);
  new_ = {path("n0"), path("n1")};
  auto r = restripe();
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->old_count, 2u);
  EXPECT_EQ(r->new_count, 4u);
  // Every unit but the two of row 0 moves; the holes are zeroed, not read.
  uint64_t data = 0, holes = 0;
  for (uint64_t u = 2; u < 64; ++u) (is_hole_unit(u) ? holes : data) += kUnit;
  EXPECT_EQ(r->data_bytes, data);
  EXPECT_EQ(r->hole_bytes, holes);
  EXPECT_EQ(progress_, std::make_pair(data, data));
  expect_finished(4);
  // Striped over every member: the added ones hold data.
  RestripeMap map{2, 4, kUnit, kStart, rows_};
  EXPECT_EQ(read_bytes(new_[1], map.new_place(7).offset, kUnit), unit_bytes(7));
}

TEST_F(RestripeTest, MetadataAreaOfPartialRowsIsMarked) {
  make_volume(2, 30);
  new_ = {path("n0")};
  auto r = restripe();
  ASSERT_TRUE(r) << r.status().message();
  expect_finished(3);
  auto vol = assemble(all(), MemberFile::Mode::read_only);
  ASSERT_TRUE(vol);
  // 2 units of metadata area: not a whole row of 3.
  EXPECT_TRUE(vol->superblock.features_incompat & kIncompatMetaPartialRow);
}

struct Shape {
  uint32_t old_count, added;
};

// Hundreds of stops, each rerun to the end: on tmpfs, where a sync costs
// nothing (the stop is an exception, so no crash semantics are lost).
class RestripeStops : public RestripeTest, public ::testing::WithParamInterface<Shape> {
 protected:
  void SetUp() override {
    char tmpl[] = "/dev/shm/peregrine-restripe-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
};

TEST_P(RestripeStops, AfterEverySuperblockCopyARerunFinishes) {
  const auto [n, k] = GetParam();
  make_volume(n, 12);
  for (uint32_t i = 0; i < k; ++i) new_.push_back(path("n" + std::to_string(i)));
  int stops = 0;
  for (int stop_at = 1;; ++stop_at) {
    SCOPED_TRACE("stopped after superblock copy " + std::to_string(stop_at));
    bool stopped = false;
    try {
      auto r = restripe([&](int step) {
        if (step == stop_at) throw Stop{};
      });
      ASSERT_TRUE(r) << r.status().message();
    } catch (const Stop&) {
      stopped = true;
    }
    if (!stopped) break;  // ran to the end: every step was a stop point
    ++stops;
    expect_consistent(n, n + k, "after step " + std::to_string(stop_at));
    auto again = restripe();
    ASSERT_TRUE(again) << again.status().message();
    EXPECT_TRUE(again->resumed || again->already_done || stop_at <= static_cast<int>(2 * k));
    expect_finished(n + k);
    auto third = restripe();
    ASSERT_TRUE(third) << third.status().message();
    EXPECT_TRUE(third->already_done);
    // Back to the start for the next stop point.
    TearDown();
    SetUp();
    make_volume(n, 12);
    new_.clear();
    for (uint32_t i = 0; i < k; ++i) new_.push_back(path("n" + std::to_string(i)));
  }
  EXPECT_GT(stops, static_cast<int>(4 * (n + k)));
}

TEST_P(RestripeStops, AfterEveryWindowsUnsyncedWritesARerunFinishes) {
  const auto [n, k] = GetParam();
  make_volume(n, 12);
  for (uint32_t i = 0; i < k; ++i) new_.push_back(path("n" + std::to_string(i)));
  for (int stop_at = 1;; ++stop_at) {
    SCOPED_TRACE("stopped after the writes of window " + std::to_string(stop_at));
    bool stopped = false;
    int windows = 0;
    try {
      auto r = restripe({}, [&] {
        if (++windows == stop_at) throw Stop{};
      });
      ASSERT_TRUE(r) << r.status().message();
    } catch (const Stop&) {
      stopped = true;
    }
    if (!stopped) break;
    expect_consistent(n, n + k, "after window " + std::to_string(stop_at));
    // Stopped again in the resumed run, one window later.
    windows = 0;
    try {
      auto r = restripe({}, [&] {
        if (++windows == 2) throw Stop{};
      });
      ASSERT_TRUE(r) << r.status().message();
    } catch (const Stop&) {
      expect_consistent(n, n + k, "after a resumed window");
    }
    auto again = restripe();
    ASSERT_TRUE(again) << again.status().message();
    expect_finished(n + k);
    TearDown();
    SetUp();
    make_volume(n, 12);
    new_.clear();
    for (uint32_t i = 0; i < k; ++i) new_.push_back(path("n" + std::to_string(i)));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RestripeStops, ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{2, 2}, Shape{3, 1}),
                         [](const auto& info) {
                           return std::to_string(info.param.old_count) + "plus" + std::to_string(info.param.added);
                         });

TEST_F(RestripeTest, RefusesBadNewMembersWritingNothing) {
  make_volume(2, 16);
  const auto before = snapshot(members_);
  // Too small.
  new_ = {make_file("small", kStart + 8 * kUnit)};
  auto r = restripe();
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "too small");
  // Already a member.
  new_ = {members_[1]};
  r = restripe();
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "same file");
  // A member of another volume.
  std::vector<std::string> other = {make_file("o0", 40 << 20)};
  mkfs(other);
  new_ = other;
  const auto other_before = snapshot(other);
  r = restripe();
  ASSERT_FALSE(r);
  EXPECT_MENTIONS(r.status(), "already member 0 of 1");
  EXPECT_EQ(snapshot(other), other_before);
  EXPECT_EQ(snapshot(members_), before);
  EXPECT_EQ(read_file(path("small")), std::string(kStart + 8 * kUnit, '\0'));
}

}  // namespace
}  // namespace peregrine::test
