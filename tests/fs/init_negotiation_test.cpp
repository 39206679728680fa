// InitNegotiation: INIT's reply gains exactly the wanted flags the kernel
// offered (those of flags2 with FUSE_INIT_EXT), and nothing when the kernel
// did not offer them, when INIT failed, or for any other reply.
#include "transport/init_negotiation.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "transport/fuse_wire.h"

namespace peregrine::fs {
namespace {

std::vector<char> init_request(uint64_t unique, uint64_t kernel_flags, bool extended = true) {
  wire::InHeader in{};
  in.opcode = wire::kOpInit;
  in.unique = unique;
  wire::InitIn arg{};
  arg.major = 7;
  arg.minor = 45;
  arg.flags = static_cast<uint32_t>(kernel_flags);
  arg.flags2 = static_cast<uint32_t>(kernel_flags >> 32);
  size_t arg_bytes = extended ? sizeof arg : 16;  // kernels before 7.36 send 16 bytes
  in.len = static_cast<uint32_t>(sizeof in + arg_bytes);
  std::vector<char> buf(in.len);
  std::memcpy(buf.data(), &in, sizeof in);
  std::memcpy(buf.data() + sizeof in, &arg, arg_bytes);
  return buf;
}

struct Reply {
  wire::OutHeader out{};
  wire::InitOut init{};
  iovec iov[2];
  explicit Reply(uint64_t unique, int32_t error = 0) {
    out.unique = unique;
    out.error = error;
    init.flags = 0x1234;  // what libfuse chose: must be kept
    iov[0] = iovec{&out, sizeof out};
    iov[1] = iovec{&init, sizeof init};
  }
  uint64_t flags() const { return init.flags | (uint64_t{init.flags2} << 32); }
};

constexpr uint64_t kWanted = wire::kDirectIoAllowMmap | wire::kOverIoUring;

TEST(InitNegotiation, GrantsWhatIsWantedAndOffered) {
  InitNegotiation n(kWanted);
  auto req = init_request(7, wire::kInitExt | wire::kDirectIoAllowMmap | wire::kOverIoUring | (uint64_t{1} << 40));
  n.note_request(req.data(), req.size());
  Reply r(7);
  EXPECT_TRUE(n.patch_reply(r.iov, 2));
  EXPECT_EQ(r.flags(), 0x1234 | wire::kInitExt | wire::kDirectIoAllowMmap | wire::kOverIoUring);
  EXPECT_EQ(n.granted(), wire::kDirectIoAllowMmap | wire::kOverIoUring);
}

TEST(InitNegotiation, GrantsOnlyWhatTheKernelOffers) {
  InitNegotiation n(kWanted);
  auto req = init_request(9, wire::kInitExt | wire::kDirectIoAllowMmap);  // enable_uring off
  n.note_request(req.data(), req.size());
  Reply r(9);
  EXPECT_TRUE(n.patch_reply(r.iov, 2));
  EXPECT_EQ(r.flags(), 0x1234 | wire::kInitExt | wire::kDirectIoAllowMmap);
  EXPECT_EQ(n.granted() & wire::kOverIoUring, 0u);
}

TEST(InitNegotiation, NothingWithoutExtendedInit) {
  InitNegotiation n(kWanted);
  auto req = init_request(3, wire::kDirectIoAllowMmap | wire::kOverIoUring, /*extended=*/false);
  n.note_request(req.data(), req.size());
  Reply r(3);
  EXPECT_TRUE(n.patch_reply(r.iov, 2));
  EXPECT_EQ(r.flags(), 0x1234u);
  EXPECT_EQ(n.granted(), 0u);
}

TEST(InitNegotiation, LeavesFailedInitAndOtherRepliesAlone) {
  InitNegotiation n(kWanted);
  auto req = init_request(5, wire::kInitExt | kWanted);
  n.note_request(req.data(), req.size());
  Reply other(6);
  EXPECT_FALSE(n.patch_reply(other.iov, 2));
  EXPECT_EQ(other.flags(), 0x1234u);
  Reply failed(5, -71);
  EXPECT_TRUE(n.patch_reply(failed.iov, 2));
  EXPECT_EQ(failed.flags(), 0x1234u);
  EXPECT_EQ(n.granted(), 0u);
}

TEST(InitNegotiation, IgnoresRequestsThatAreNotInit) {
  InitNegotiation n(kWanted);
  auto req = init_request(11, wire::kInitExt | kWanted);
  reinterpret_cast<wire::InHeader*>(req.data())->opcode = wire::kOpRead;
  n.note_request(req.data(), req.size());
  Reply r(11);
  EXPECT_FALSE(n.patch_reply(r.iov, 2));
  EXPECT_EQ(r.flags(), 0x1234u);
}

TEST(InitNegotiation, RevokedFlagsLeaveTheReply) {
  InitNegotiation n(kWanted);
  auto req = init_request(13, wire::kInitExt | kWanted);
  n.note_request(req.data(), req.size());
  Reply r(13);
  ASSERT_TRUE(n.patch_reply(r.iov, 2));
  n.revoke(r.iov, 2, wire::kOverIoUring);  // e.g. the rings could not be made
  EXPECT_EQ(r.flags(), 0x1234 | wire::kInitExt | wire::kDirectIoAllowMmap);
  EXPECT_EQ(n.granted(), wire::kDirectIoAllowMmap);
}

TEST(InitNegotiation, GrantsFlagsOfTheFirstWordWithOrWithoutExtendedInit) {
  const uint64_t wanted = kWanted | wire::kHandleKillprivV2;
  {
    InitNegotiation n(wanted);
    auto req = init_request(15, wire::kInitExt | wire::kHandleKillprivV2 | wire::kDirectIoAllowMmap);
    n.note_request(req.data(), req.size());
    Reply r(15);
    ASSERT_TRUE(n.patch_reply(r.iov, 2));
    EXPECT_EQ(r.flags(), 0x1234 | wire::kInitExt | wire::kHandleKillprivV2 | wire::kDirectIoAllowMmap);
    EXPECT_EQ(n.granted(), wire::kHandleKillprivV2 | wire::kDirectIoAllowMmap);
  }
  {
    InitNegotiation n(wanted);
    auto req = init_request(17, wire::kHandleKillprivV2, /*extended=*/false);
    n.note_request(req.data(), req.size());
    Reply r(17);
    ASSERT_TRUE(n.patch_reply(r.iov, 2));
    EXPECT_EQ(r.flags(), 0x1234 | wire::kHandleKillprivV2) << "no FUSE_INIT_EXT for a first-word flag";
    EXPECT_EQ(n.granted(), wire::kHandleKillprivV2);
    n.revoke(r.iov, 2, wire::kHandleKillprivV2);
    EXPECT_EQ(r.flags(), 0x1234u);
    EXPECT_EQ(n.granted(), 0u);
  }
}

// The io-uring rings' entries may be smaller than fuse.max_request_bytes
// (ring_budget.h): INIT's reply then promises no larger request, in both
// fields the kernel sizes requests by, and never raises either.
TEST(InitNegotiation, CapRequestBytesLowersMaxWriteAndMaxPages) {
  Reply r(9);
  r.init.max_write = 1u << 20;
  r.init.max_pages = 256;
  InitNegotiation::cap_request_bytes(r.iov, 2, 256 * 1024);
  EXPECT_EQ(r.init.max_write, 256u * 1024);
  EXPECT_EQ(r.init.max_pages, 64);
  EXPECT_EQ(r.init.flags, 0x1234u);

  Reply small(10);
  small.init.max_write = 128 * 1024;
  small.init.max_pages = 32;
  InitNegotiation::cap_request_bytes(small.iov, 2, 256 * 1024);
  EXPECT_EQ(small.init.max_write, 128u * 1024);
  EXPECT_EQ(small.init.max_pages, 32);
}

}  // namespace
}  // namespace peregrine::fs
