// Crash recovery: a scripted sequence of metadata operations is run with a
// crash injected after the k-th volume write, for EVERY k, under several
// crash models (everything written landed / unflushed writes lost / the
// crashing write torn). Each recovery must mount, equal the state after
// some prefix of the operations that is no shorter than the last
// successful fsync, and have no extent both free and in use. Plus explicit
// torn-journal-tail and torn-checkpoint cases.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "meta_test_util.h"
#include "peregrine/meta/fsck.h"

namespace peregrine::meta {
namespace {

using test::expect_space_consistent;
using test::kMiB;
using test::mount_ok;
using test::new_volume;
using test::small_geometry;
using Policy = MemoryVolumeIo::CrashPolicy;
using Torn = MemoryVolumeIo::TornMode;

Options crash_options() {
  Options o = test::test_options();
  o.journal_size = 64 * 1024;  // small ring: checkpoints and wrap-around
  return o;
}

// Inode numbers are deterministic, so steps can name them directly.
struct Ctx {
  Ino d = 0, a = 0, b = 0, f = 0, e = 0;
  std::vector<WriteRange> wa, wf;
};

struct Step {
  const char* what;
  std::function<int(Metadata&, Ctx&)> run;
  bool durability = false;  // fsync/sync/checkpoint: a durable point
};

std::vector<Step> script() {
  const Cred c{1000, 100};
  std::vector<Step> s;
  auto mk = [&](const char* w, std::function<int(Metadata&, Ctx&)> fn) { s.push_back({w, std::move(fn), false}); };
  auto durable = [&](const char* w, std::function<int(Metadata&, Ctx&)> fn) { s.push_back({w, std::move(fn), true}); };
  mk("mkdir /d", [c](Metadata& m, Ctx& x) {
    InodeAttr a;
    int rc = m.mkdir(kRootIno, "d", 0755, c, &a);
    x.d = a.ino;
    return rc;
  });
  mk("create /d/a", [c](Metadata& m, Ctx& x) {
    InodeAttr a;
    int rc = m.create(x.d, "a", 0644, c, &a);
    x.a = a.ino;
    return rc;
  });
  mk("prepare a", [](Metadata& m, Ctx& x) { return m.prepare_write(x.a, 0, 64 * 1024, &x.wa); });
  mk("complete a", [](Metadata& m, Ctx& x) { return m.complete_write(x.a, x.wa, 64 * 1024); });
  durable("fsync a", [](Metadata& m, Ctx& x) { return m.fsync(x.a); });
  mk("mknod /d/b", [c](Metadata& m, Ctx& x) {
    InodeAttr a;
    int rc = m.mknod(x.d, "b", S_IFREG | 0600, 0, c, &a);
    x.b = a.ino;
    return rc;
  });
  mk("link /b2", [](Metadata& m, Ctx& x) {
    InodeAttr a;
    return m.link(x.b, kRootIno, "b2", &a);
  });
  mk("symlink /s", [c](Metadata& m, Ctx&) {
    InodeAttr a;
    return m.symlink(kRootIno, "s", "d/a", c, &a);
  });
  mk("setxattr b", [](Metadata& m, Ctx& x) { return m.setxattr(x.b, "user.x", "1", 0); });
  mk("rename d/b d/c", [](Metadata& m, Ctx& x) { return m.rename(x.d, "b", x.d, "c", 0); });
  durable("fsync b", [](Metadata& m, Ctx& x) { return m.fsync(x.b); });
  mk("mkdir /e", [c](Metadata& m, Ctx& x) {
    InodeAttr a;
    int rc = m.mkdir(kRootIno, "e", 0755, c, &a);
    x.e = a.ino;
    return rc;
  });
  mk("rename /e /d/e", [](Metadata& m, Ctx& x) { return m.rename(kRootIno, "e", x.d, "e", 0); });
  mk("create /f", [c](Metadata& m, Ctx& x) {
    InodeAttr a;
    int rc = m.create(kRootIno, "f", 0644, c, &a);
    x.f = a.ino;
    return rc;
  });
  mk("prepare f", [](Metadata& m, Ctx& x) { return m.prepare_write(x.f, 0, 8192, &x.wf); });
  mk("complete f", [](Metadata& m, Ctx& x) { return m.complete_write(x.f, x.wf, 8192); });
  mk("unlink open /f", [](Metadata& m, Ctx&) { return m.unlink(kRootIno, "f"); });
  durable("fsync root", [](Metadata& m, Ctx&) { return m.fsync(kRootIno); });
  mk("truncate a", [](Metadata& m, Ctx& x) {
    SetAttrIn in;
    in.valid = SetAttrIn::kSize;
    in.size = 4096;
    InodeAttr a;
    return m.setattr(x.a, in, &a);
  });
  mk("exchange d/c /s", [](Metadata& m, Ctx& x) { return m.rename(x.d, "c", kRootIno, "s", RENAME_EXCHANGE); });
  mk("rename /s -> /sw leaving a whiteout",
     [c](Metadata& m, Ctx&) { return m.rename(kRootIno, "s", kRootIno, "sw", RENAME_WHITEOUT, c); });
  durable("checkpoint", [](Metadata& m, Ctx&) { return m.checkpoint(); });
  mk("fallocate a", [](Metadata& m, Ctx& x) { return m.fallocate(x.a, FALLOC_FL_KEEP_SIZE, 64 * 1024, 64 * 1024); });
  mk("rmdir d/e", [](Metadata& m, Ctx& x) { return m.rmdir(x.d, "e"); });
  mk("unlink /b2", [](Metadata& m, Ctx&) { return m.unlink(kRootIno, "b2"); });
  mk("setxattr root", [](Metadata& m, Ctx&) { return m.setxattr(kRootIno, "user.r", std::string(6000, 'r'), 0); });
  durable("fsync a", [](Metadata& m, Ctx& x) { return m.fsync(x.a); });
  mk("release f", [](Metadata& m, Ctx& x) { return m.release(x.f); });
  // Many small durable commits: the 64 KiB ring fills, checkpoints are
  // written from the commit path and the ring wraps.
  for (int i = 0; i < 40; ++i) {
    mk("mknod gN", [c, i](Metadata& m, Ctx&) {
      InodeAttr a;
      return m.mknod(kRootIno, test::cat("g", i) + std::string(200, 'x'), S_IFREG | 0644, 0, c, &a);
    });
    durable("sync", [](Metadata& m, Ctx&) { return m.sync(); });
  }
  mk("rename /d /g0", [](Metadata& m, Ctx&) { return m.rename(kRootIno, "d", kRootIno, "dd", RENAME_NOREPLACE); });
  return s;
}

// Recovered state after each prefix of the script: states[j] = what a mount
// shows after steps [0, j) are durable.
std::vector<std::string> reference_states(const std::vector<Step>& steps, const Geometry& g) {
  std::vector<std::string> states;
  auto io = new_volume(g);
  auto md = mount_ok(*io, g, crash_options());
  Ctx x;
  auto snapshot = [&] {
    EXPECT_EQ(md->sync(), 0);
    auto img = io->crash_image(Policy::kUnflushedLost);
    auto m2 = mount_ok(*img, g, crash_options());
    states.push_back(m2 ? m2->dump() : "mount failed");
  };
  snapshot();
  for (const Step& s : steps) {
    EXPECT_EQ(s.run(*md, x), 0) << s.what;
    snapshot();
  }
  return states;
}

struct RunResult {
  size_t floor = 0;  // steps known durable
  uint64_t writes = 0;
  uint64_t head = 0;  // logical journal head at the end
};

RunResult run_script(MemoryVolumeIo& io, const Geometry& g, const std::vector<Step>& steps) {
  RunResult r;
  auto md = mount_ok(io, g, crash_options());
  if (!md) return r;
  Ctx x;
  for (size_t j = 0; j < steps.size(); ++j) {
    const int rc = steps[j].run(*md, x);
    if (steps[j].durability && rc == 0 && !io.crashed()) r.floor = j + 1;
  }
  r.head = md->journal_position().head;
  if (md->unmount().is_ok() && !io.crashed()) r.floor = steps.size();
  r.writes = io.write_count();
  return r;
}

TEST(CrashRecovery, EveryCrashPointRecoversAPrefix) {
  const Geometry g = small_geometry();
  const auto steps = script();
  const auto states = reference_states(steps, g);
  ASSERT_EQ(states.size(), steps.size() + 1);

  // A run without a crash: how many writes there are to crash after.
  auto clean = new_volume(g);
  const RunResult full = run_script(*clean, g, steps);
  ASSERT_EQ(full.floor, steps.size());
  ASSERT_GT(full.writes, 20u);
  // The script goes round the 64 KiB ring: wrap-around and skipping the
  // ring end are covered by the crash points.
  ASSERT_GT(full.head, 2u * 64 * 1024);

  struct Mode {
    Policy policy;
    Torn torn;
  };
  const Mode modes[] = {{Policy::kAllLanded, Torn::kNone},
                        {Policy::kAllLanded, Torn::kFirstHalf},
                        {Policy::kAllLanded, Torn::kAllButFirst},
                        {Policy::kUnflushedLost, Torn::kNone}};
  size_t checked = 0;
  for (const Mode& mode : modes) {
    for (uint64_t k = 0; k <= full.writes; ++k) {
      SCOPED_TRACE(test::cat("crash after write ", k) + " policy " + std::to_string(static_cast<int>(mode.policy)) +
                   " torn " + std::to_string(static_cast<int>(mode.torn)));
      auto io = new_volume(g);
      io->crash_after_writes(k, mode.torn);
      const RunResult r = run_script(*io, g, steps);
      auto img = io->crash_image(mode.policy);
      if (k % 5 == 0) {  // fsck -n of the crashed image finds no damage
        FsckReport fr = run_fsck(*img, g, {.repair = false, .journal_size = 64 * 1024});
        EXPECT_EQ(fr.exit_code, 0) << fr.messages.back();
      }
      auto md = mount_ok(*img, g, crash_options());
      ASSERT_NE(md, nullptr);
      const std::string got = md->dump();
      size_t match = states.size();
      for (size_t j = states.size(); j-- > 0;) {
        if (states[j] == got) {
          match = j;
          break;
        }
      }
      ASSERT_LT(match, states.size()) << "recovered state is no prefix of the script:\n" << got;
      EXPECT_GE(match, r.floor) << "fsync'd step lost (recovered prefix " << match << ")";
      if (getenv("META_CRASH_VERBOSE"))
        fprintf(stderr, "k=%lu floor=%zu match=%zu writes=%lu\n", (unsigned long)k, r.floor, match,
                (unsigned long)r.writes);
      expect_space_consistent(got, md->free_map(), g);
      // The recovered volume keeps working.
      InodeAttr a;
      ASSERT_EQ(md->mknod(kRootIno, "after-crash", S_IFREG | 0644, 0, Cred{}, &a), 0);
      ASSERT_TRUE(md->unmount().is_ok());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * (full.writes + 1));
}

TEST(CrashRecovery, TornJournalTailStopsCleanly) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);
  InodeAttr a;
  ASSERT_EQ(md->mknod(kRootIno, "kept", S_IFREG | 0644, 0, Cred{}, &a), 0);
  ASSERT_EQ(md->sync(), 0);
  const std::string durable = md->dump();
  for (int i = 0; i < 100; ++i) {  // a multi-block batch
    ASSERT_EQ(md->mknod(kRootIno, test::cat("lost", i) + std::string(100, 'y'), S_IFREG | 0644, 0, Cred{}, &a), 0);
  }
  io->crash_after_writes(io->write_count() + 1, Torn::kFirstHalf);
  ASSERT_EQ(md->sync(), 0);  // the process believes it; the disk got half
  auto img = io->crash_image(Policy::kAllLanded);
  md.reset();
  auto md2 = mount_ok(*img, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->dump(), durable);
  EXPECT_EQ(md2->mount_report().replayed_batches, 1u);
  EXPECT_NE(md2->mount_report().journal_stop.find("torn"), std::string::npos) << md2->mount_report().journal_stop;
}

TEST(CrashRecovery, TornCheckpointFallsBackToTheOtherSlot) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);  // checkpoint seq 1 (slot 1)
  InodeAttr a;
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(md->mknod(kRootIno, test::cat("f", i), S_IFREG | 0644, 0, Cred{}, &a), 0);
  }
  ASSERT_EQ(md->checkpoint(), 0);  // seq 2 (slot 0)
  ASSERT_EQ(md->mknod(kRootIno, "after", S_IFREG | 0644, 0, Cred{}, &a), 0);
  ASSERT_EQ(md->sync(), 0);
  const std::string durable = md->dump();
  // Checkpoint 3 goes to slot 1: its body write is torn, its header never
  // written. Slot 1 now holds the old header over a half-new body.
  io->crash_after_writes(io->write_count() + 1, Torn::kFirstHalf);
  md->checkpoint();
  auto img = io->crash_image(Policy::kAllLanded);
  md.reset();
  auto md2 = mount_ok(*img, g);
  ASSERT_NE(md2, nullptr);
  EXPECT_EQ(md2->mount_report().checkpoint_seq, 2u);
  EXPECT_EQ(md2->dump(), durable);
}

TEST(CrashRecovery, NoValidCheckpointIsRefusedWithAMessage) {
  const Geometry g = small_geometry();
  auto io = new_volume(g);
  {
    auto md = mount_ok(*io, g);
    ASSERT_TRUE(md->unmount().is_ok());
  }
  const MetaLayout l = *MetaLayout::compute(g);
  std::vector<std::byte> junk(16, std::byte{0x5a});
  io->poke(l.slot_off[0] + 16, junk);
  io->poke(l.slot_off[1] + 16, junk);
  auto md = Metadata::mount(*io, g, test::test_options());
  ASSERT_FALSE(md.has_value());
  EXPECT_NE(md.status().message().find("no valid checkpoint"), std::string::npos) << md.status().message();
}

TEST(CrashRecovery, FullMetadataAreaRefusesGrowthAndStaysMountable) {
  Geometry g = small_geometry();
  g.meta_size = 2 * kMiB;  // 1 MiB journal, two 512 KiB slots
  g.data_offset = 2 * kMiB;
  auto io = new_volume(g);
  auto md = mount_ok(*io, g);
  InodeAttr a;
  // More files than a 512 KiB checkpoint can describe: creation must stop
  // with ENOSPC before a checkpoint would no longer fit, never with EIO.
  int created = 0;
  int rc = 0;
  for (; created < 20000; ++created) {
    rc = md->mknod(kRootIno, test::cat("file-with-a-long-name-", created), S_IFREG | 0644, 0, Cred{}, &a);
    if (rc != 0) break;
  }
  ASSERT_EQ(rc, -ENOSPC) << "after " << created << " files";
  EXPECT_GT(created, 1000);
  StatFs s;
  ASSERT_EQ(md->statfs(&s), 0);
  EXPECT_LE(s.files_free, s.files);
  EXPECT_EQ(md->checkpoint(), 0) << md->last_error();
  ASSERT_TRUE(md->unmount().is_ok());
  md.reset();
  auto again = mount_ok(*io, g);
  for (int i = 0; i < created; i += 97) {
    EXPECT_EQ(again->lookup(kRootIno, test::cat("file-with-a-long-name-", i), &a), 0) << i;
  }
  EXPECT_EQ(again->lookup(kRootIno, test::cat("file-with-a-long-name-", created - 1), &a), 0);
}

}  // namespace
}  // namespace peregrine::meta
