// LoneCaller: alone while no READ or WRITE and no second caller came for
// kQuietNs, never when disabled; requests nobody waits for (forgets) and
// RELEASE, which comes with pid 0, change nothing; other requests with pid
// 0 (a caller in an unseen pid namespace) end it.
#include "peregrine/fs/lone_caller.h"

#include <gtest/gtest.h>
#include <linux/fuse.h>

#include <cstring>
#include <vector>

namespace peregrine::fs {
namespace {

std::vector<char> request(uint32_t opcode, uint32_t pid) {
  std::vector<char> msg(sizeof(fuse_in_header) + 16, 'x');
  fuse_in_header h{};
  h.len = static_cast<uint32_t>(msg.size());
  h.opcode = opcode;
  h.unique = 1;
  h.pid = pid;
  std::memcpy(msg.data(), &h, sizeof h);
  return msg;
}

constexpr uint64_t kQuiet = LoneCaller::kQuietNs;
constexpr uint64_t kStart = 10 * kQuiet;  // a clock well past its first quiet period

void note(LoneCaller& lone, uint32_t opcode, uint32_t pid, uint64_t now) {
  const std::vector<char> msg = request(opcode, pid);
  lone.note_request(msg.data(), msg.size(), now);
}

TEST(LoneCallerTest, DisabledIsNeverAlone) {
  LoneCaller lone;
  EXPECT_FALSE(lone.alone(kStart));
  note(lone, FUSE_LOOKUP, 100, kStart);
  EXPECT_FALSE(lone.alone(kStart + 2 * kQuiet));
}

TEST(LoneCallerTest, AloneUntilADataRequestThenAgainAfterAQuietPeriod) {
  LoneCaller lone;
  lone.set_enabled(true);
  EXPECT_TRUE(lone.alone(kStart));
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_GETXATTR, 100, kStart + 1);
  EXPECT_TRUE(lone.alone(kStart + 2)) << "one caller's metadata requests";
  for (uint32_t op : {FUSE_READ, FUSE_WRITE}) {
    const uint64_t t = kStart + 10 * kQuiet * op;
    note(lone, op, 100, t);
    EXPECT_FALSE(lone.alone(t + kQuiet)) << "opcode " << op;
    EXPECT_TRUE(lone.alone(t + kQuiet + 1)) << "opcode " << op;
  }
}

TEST(LoneCallerTest, ASecondCallerEndsItForAQuietPeriod) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_LOOKUP, 200, kStart + 5);
  EXPECT_FALSE(lone.alone(kStart + 5 + kQuiet));
  EXPECT_TRUE(lone.alone(kStart + 6 + kQuiet));
  note(lone, FUSE_GETATTR, 200, kStart + 7 + kQuiet);
  EXPECT_TRUE(lone.alone(kStart + 8 + kQuiet)) << "the new caller alone";
}

TEST(LoneCallerTest, ForgetsAndReleasesChangeNothing) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_FORGET, 300, kStart + 1);
  note(lone, FUSE_BATCH_FORGET, 301, kStart + 2);
  note(lone, FUSE_INTERRUPT, 302, kStart + 3);
  note(lone, FUSE_RELEASE, 0, kStart + 4);
  EXPECT_TRUE(lone.alone(kStart + 5));
  note(lone, FUSE_LOOKUP, 100, kStart + 6);
  EXPECT_TRUE(lone.alone(kStart + 7)) << "the caller of before is still the last one";
}

TEST(LoneCallerTest, PidZeroEndsItButOnARelease) {
  LoneCaller lone;
  lone.set_enabled(true);
  note(lone, FUSE_LOOKUP, 100, kStart);
  note(lone, FUSE_RELEASEDIR, 0, kStart + 1);
  EXPECT_TRUE(lone.alone(kStart + 2));
  note(lone, FUSE_LOOKUP, 0, kStart + 3);
  EXPECT_FALSE(lone.alone(kStart + 3 + kQuiet)) << "a caller this daemon cannot name";
  EXPECT_TRUE(lone.alone(kStart + 4 + kQuiet));
}

TEST(LoneCallerTest, ShortMessageChangesNothing) {
  LoneCaller lone;
  lone.set_enabled(true);
  const std::vector<char> msg = request(FUSE_WRITE, 100);
  lone.note_request(msg.data(), sizeof(fuse_in_header) - 1, kStart);
  EXPECT_TRUE(lone.alone(kStart + 1));
}

}  // namespace
}  // namespace peregrine::fs
