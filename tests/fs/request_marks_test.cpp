// mark_request: the kill-suid/sgid marks of WRITE, SETATTR and OPEN, the
// SETATTR that names no attribute, and FUSE_TMPFILE turned into a marked
// FUSE_CREATE; every request overwrites the marks of the one before. The
// kernel's unique, page-cache writeback (FUSE_WRITE_CACHE) and the READ
// that fills the page cache (no lock owner) for the IO gates' order.
#include "transport/mark_request.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "transport/fuse_wire.h"

namespace peregrine::fs {
namespace {

template <typename Arg>
std::vector<char> request(uint32_t opcode, const Arg& arg) {
  wire::InHeader in{};
  in.opcode = opcode;
  in.unique = 42;
  in.len = static_cast<uint32_t>(sizeof in + sizeof arg);
  std::vector<char> buf(in.len);
  std::memcpy(buf.data(), &in, sizeof in);
  std::memcpy(buf.data() + sizeof in, &arg, sizeof arg);
  return buf;
}

RequestMarks marks_after(std::vector<char>& buf) {
  mark_request(buf.data(), buf.size());
  return tls_request_marks;
}

uint32_t opcode_of(const std::vector<char>& buf) {
  wire::InHeader in;
  std::memcpy(&in, buf.data(), sizeof in);
  return in.opcode;
}

TEST(RequestMarks, WriteCarriesTheKernelsKillMark) {
  wire::WriteIn w{};
  w.write_flags = wire::kWriteKillSuidgid;
  auto marked = request(wire::kOpWrite, w);
  EXPECT_TRUE(marks_after(marked).kill_suidgid);
  w.write_flags = 1;  // FUSE_WRITE_CACHE only
  auto plain = request(wire::kOpWrite, w);
  EXPECT_FALSE(marks_after(plain).kill_suidgid) << "the previous request's mark must not stay";
}

TEST(RequestMarks, UniqueAndWhatTheRequestDoesToThePageCache) {
  wire::WriteIn w{};
  w.write_flags = wire::kWriteCache;
  auto writeback = request(wire::kOpWrite, w);
  RequestMarks m = marks_after(writeback);
  EXPECT_EQ(m.unique, 42u);
  EXPECT_TRUE(m.from_page_cache);
  w.write_flags = 0;
  auto direct = request(wire::kOpWrite, w);
  EXPECT_FALSE(marks_after(direct).from_page_cache);

  wire::ReadIn r{};
  auto fill = request(wire::kOpRead, r);  // readahead, a fault: no lock owner
  EXPECT_TRUE(marks_after(fill).fills_page_cache);
  r.read_flags = wire::kReadLockOwner;  // read(2) of a direct-IO file
  auto passed_through = request(wire::kOpRead, r);
  m = marks_after(passed_through);
  EXPECT_FALSE(m.fills_page_cache);
  EXPECT_EQ(m.unique, 42u);
  auto after = request(wire::kOpWrite, w);
  EXPECT_FALSE(marks_after(fill).from_page_cache);
  EXPECT_FALSE(marks_after(after).fills_page_cache) << "the previous request's mark must not stay";
}

TEST(RequestMarks, SetattrTruncateMarkAndTheSetattrThatNamesNothing) {
  wire::SetattrInValid s{};
  s.valid = (1u << 3) | wire::kFattrKillSuidgid;  // size
  auto truncate = request(wire::kOpSetattr, s);
  RequestMarks m = marks_after(truncate);
  EXPECT_TRUE(m.kill_suidgid);
  EXPECT_FALSE(m.remove_privs);
  s.valid = 0;  // file_remove_privs(), direct mode
  auto empty = request(wire::kOpSetattr, s);
  EXPECT_TRUE(marks_after(empty).remove_privs);
  s.valid = 1u << 10;  // ctime alone: chown(2) to -1, -1 under the writeback cache
  auto ctime_only = request(wire::kOpSetattr, s);
  EXPECT_TRUE(marks_after(ctime_only).remove_privs);
  s.valid = (1u << 5) | (1u << 10);  // mtime and ctime: the writeback cache's times
  auto times = request(wire::kOpSetattr, s);
  m = marks_after(times);
  EXPECT_FALSE(m.remove_privs);
  EXPECT_FALSE(m.kill_suidgid);
}

TEST(RequestMarks, OpenWithOTruncCarriesTheKillMark) {
  wire::OpenIn o{};
  o.open_flags = wire::kOpenKillSuidgid;
  auto marked = request(wire::kOpOpen, o);
  EXPECT_TRUE(marks_after(marked).kill_suidgid);
}

TEST(RequestMarks, TmpfileBecomesAMarkedCreate) {
  wire::CreateIn c{};
  c.mode = 0100600;
  auto tmpfile = request(wire::kOpTmpfile, c);
  RequestMarks m = marks_after(tmpfile);
  EXPECT_TRUE(m.tmpfile);
  EXPECT_EQ(opcode_of(tmpfile), wire::kOpCreate);
  wire::CreateIn arg;
  std::memcpy(&arg, tmpfile.data() + sizeof(wire::InHeader), sizeof arg);
  EXPECT_EQ(arg.mode, 0100600u) << "the arguments stay as they are";
  auto create = request(wire::kOpCreate, c);
  EXPECT_FALSE(marks_after(create).tmpfile);
}

TEST(RequestMarks, ATruncatedRequestCarriesNoMark) {
  wire::WriteIn w{};
  w.write_flags = wire::kWriteKillSuidgid;
  auto buf = request(wire::kOpWrite, w);
  buf.resize(sizeof(wire::InHeader) + 8);
  EXPECT_FALSE(marks_after(buf).kill_suidgid);
}

}  // namespace
}  // namespace peregrine::fs
