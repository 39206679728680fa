// An fsync-heavy database under power cuts. A child process commits
// numbered rows to SQLite (WAL, synchronous=FULL), one transaction each:
// the row, of a size and bytes that follow from its number, and a summary
// row counting rows and bytes. It reports each number once COMMIT has
// returned. The members behave like drives with a volatile write cache
// (power_cut_util.h); power is cut as a seeded member write or flush
// starts, or at the kill after a seeded number of commits. After recovery
// the database passes integrity_check and holds exactly rows 1..N with
// their bytes, N no less than the last reported commit and no more than
// the one in flight, and the summary in step (each transaction all or
// nothing); fsck is clean. The next round commits on from N.
//
// PEREGRINE_POWER_CUT_SQLITE_ROUNDS (default 40) and PEREGRINE_CRASH_SEED
// (default: from the clock; printed) make a longer run and a reproduction.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <random>

#include "fs_test_util.h"
#include "power_cut_util.h"

namespace peregrine::fstest {
namespace {

size_t row_size(int64_t id) { return 64 + mix(static_cast<uint64_t>(id)) % 6000; }
std::string row_bytes(int64_t id) { return pattern(row_size(id), mix(static_cast<uint64_t>(id) ^ 0x77)); }

const char* kSchema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS rows(id INTEGER PRIMARY KEY, payload BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS summary(k INTEGER PRIMARY KEY, n INTEGER NOT NULL, bytes INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO summary VALUES(1, 0, 0);";

// The child: commits rows from the summary's n + 1 on, writing each
// committed number to `acks`, until the daemon's end fails a call.
[[noreturn]] void commit_rows(const std::string& path, int acks) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK || sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
    _exit(0);  // the cut came first
  sqlite3_stmt* last = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT n FROM summary WHERE k = 1", -1, &last, nullptr) != SQLITE_OK ||
      sqlite3_step(last) != SQLITE_ROW)
    _exit(0);
  int64_t id = sqlite3_column_int64(last, 0);
  sqlite3_finalize(last);
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* count = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO rows VALUES(?, ?)", -1, &insert, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "UPDATE summary SET n = ?, bytes = bytes + ? WHERE k = 1", -1, &count, nullptr) !=
          SQLITE_OK)
    _exit(0);
  for (;;) {
    ++id;
    const std::string bytes = row_bytes(id);
    if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) _exit(0);
    sqlite3_bind_int64(insert, 1, id);
    sqlite3_bind_blob(insert, 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(count, 1, id);
    sqlite3_bind_int64(count, 2, static_cast<int64_t>(bytes.size()));
    if (sqlite3_step(insert) != SQLITE_DONE || sqlite3_step(count) != SQLITE_DONE) _exit(0);
    sqlite3_reset(insert);
    sqlite3_reset(count);
    if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) _exit(0);
    if (::write(acks, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(0);
  }
}

// What the recovered database holds, checked row by row; "" if it is
// consistent, else what is wrong. *committed: its n.
std::string check_database(const std::string& path, int64_t* committed) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return std::string("open: ") + sqlite3_errmsg(db);
  std::string problem;
  auto one_row = [&](const char* sql, const std::function<void(sqlite3_stmt*)>& take) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
      if (problem.empty()) problem = std::string(sql) + ": " + sqlite3_errmsg(db);
    } else {
      take(st);
    }
    sqlite3_finalize(st);
  };
  one_row("PRAGMA integrity_check", [&](sqlite3_stmt* st) {
    const std::string verdict = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    if (verdict != "ok") problem = "integrity_check: " + verdict;
  });
  int64_t n = 0, bytes = 0;
  one_row("SELECT n, bytes FROM summary WHERE k = 1", [&](sqlite3_stmt* st) {
    n = sqlite3_column_int64(st, 0);
    bytes = sqlite3_column_int64(st, 1);
  });
  int64_t id_sum_bytes = 0, rows = 0;
  sqlite3_stmt* st = nullptr;
  if (problem.empty() && sqlite3_prepare_v2(db, "SELECT id, payload FROM rows ORDER BY id", -1, &st, nullptr) == SQLITE_OK) {
    while (problem.empty() && sqlite3_step(st) == SQLITE_ROW) {
      const int64_t id = sqlite3_column_int64(st, 0);
      const std::string got(static_cast<const char*>(sqlite3_column_blob(st, 1)),
                            static_cast<size_t>(sqlite3_column_bytes(st, 1)));
      ++rows;
      if (id != rows) problem = "row " + std::to_string(rows) + " is numbered " + std::to_string(id);
      else if (got != row_bytes(id)) problem = "row " + std::to_string(id) + " holds bytes its commit did not write";
      id_sum_bytes += static_cast<int64_t>(got.size());
    }
  }
  sqlite3_finalize(st);
  if (problem.empty() && (rows != n || id_sum_bytes != bytes))
    problem = "summary says " + std::to_string(n) + " rows of " + std::to_string(bytes) + " bytes, the table holds " +
              std::to_string(rows) + " of " + std::to_string(id_sum_bytes);
  sqlite3_close(db);
  *committed = n;
  return problem;
}

// Parameter: the fuse.cache mode.
class PowerCutSqliteTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(PowerCutSqliteTest, power_cut_CommittedTransactionsSurviveWholeAndInOrder) {
  const uint64_t rounds = env_u64("PEREGRINE_POWER_CUT_SQLITE_ROUNDS", 40);
  const uint64_t seed = crash_seed("sqlite power cuts", rounds);
  const std::vector<std::string> options = {"-o", "fuse.cache=" + GetParam()};
  Volume v(4, "64M");
  ASSERT_EQ(v.mkfs().code, 0);
  auto kill_at_io = [&](uint64_t round) { return kill_at_io_of(seed, round, rounds, 200); };
  ASSERT_EQ(mount_with_power_cut(v, options, kill_at_io(0)).code, 0);
  const std::string db = v.at("db.sqlite");
  int64_t committed = 0;  // rows the last recovery found
  PowerCutOutcome cuts;
  for (uint64_t round = 0; round < rounds && !HasFailure(); ++round) {
    const std::string where = "seed " + std::to_string(seed) + " round " + std::to_string(round);
    std::mt19937_64 rng(mix(seed * 1000003 + round));
    const uint64_t kill_after = 1 + rng() % 60;
    Fd ack_fd;
    const pid_t child = fork_with_acks([&](int acks) { commit_rows(db, acks); }, &ack_fd);
    ASSERT_GT(child, 0) << std::strerror(errno);
    int64_t acked = committed;
    for (uint64_t seen = 0; seen < kill_after && ::read(ack_fd.get(), &acked, sizeof acked) == sizeof acked;) ++seen;
    int status = 0;
    v.kill9([&] {
      ::kill(child, SIGKILL);
      EXPECT_EQ(::waitpid(child, &status, 0), child);
    });
    // A commit reported after the last read is durable too.
    int64_t later = 0;
    while (::read(ack_fd.get(), &later, sizeof later) == sizeof later) acked = later;
    PowerCutOutcome o = cut_power(v, mix(seed ^ (round << 20)));
    cuts.pending += o.pending;
    cuts.lost += o.lost;
    cuts.torn += o.torn;

    RunResult m = v.mount(options);
    ASSERT_EQ(m.code, 0) << where << ": mount after the cut: " << m.describe();
    int64_t found = 0;
    const std::string problem = check_database(db, &found);
    EXPECT_EQ(problem, "") << where;
    EXPECT_GE(found, acked) << where << ": a commit SQLite reported is gone";
    // At most the transaction in flight at the cut, beyond those reported.
    EXPECT_LE(found, acked + 1) << where;
    committed = found;
    ASSERT_EQ(unmount_and_fsck(v), "") << where;
    ASSERT_EQ(mount_with_power_cut(v, options, kill_at_io(round + 1)).code, 0) << where;
  }
  std::printf("sqlite power cuts: %llu commits survive; member writes no flush covered: %llu (lost %llu, torn %llu)\n",
              static_cast<unsigned long long>(committed), static_cast<unsigned long long>(cuts.pending),
              static_cast<unsigned long long>(cuts.lost), static_cast<unsigned long long>(cuts.torn));
  EXPECT_GT(committed, 0) << "no commit in any round: the harness tested nothing";
  int st = v.unmount();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
}

PEREGRINE_FOR_CACHE_MODES(PowerCutSqliteTest);

}  // namespace
}  // namespace peregrine::fstest
