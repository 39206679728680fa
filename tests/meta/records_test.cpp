// Journal record, batch and checkpoint encode/decode: round trips, and
// refusal of truncated, corrupted and out-of-limit input.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "peregrine/meta/checkpoint.h"
#include "peregrine/meta/journal.h"
#include "peregrine/meta/records.h"

// GCC 12 at -O2 reports a false -Wrestrict inside std::string assignment of
// short literals (GCC bug 105329); nothing here copies overlapping memory.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
// The rows below name only the fields their delta type uses (designated
// initializers); GCC would ask for every other field too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace peregrine::meta {
namespace {

std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

// One record with every delta type, each field its type encodes set.
Txn sample_txn() {
  return {
      {.type = DeltaType::kInodePut,
       .ino = 7,
       .attr = InodeAttr{7, 1, S_IFLNK | 0777, 1, 2, 1, 3, 0, 10, 11, 12, 0},
       .name = "abc"},
      {.type = DeltaType::kDirentPut, .ino = 1, .child = 7, .a = 3, .name = "link"},
      {.type = DeltaType::kXattrPut, .ino = 7, .name = "user.k", .value = std::string("v\0w", 3)},
      {.type = DeltaType::kExtentMap, .ino = 9, .a = 4096, .b = 1 << 20, .c = 8192, .written = true},
      {.type = DeltaType::kInodeDel, .ino = 5},
      {.type = DeltaType::kOrphanAdd, .ino = 5},
      {.type = DeltaType::kOrphanDel, .ino = 5},
      {.type = DeltaType::kExtentUnmap, .ino = 9, .a = 0, .c = 4096},
      {.type = DeltaType::kExtentWritten, .ino = 9, .a = 0, .b = 8192, .c = 4096},
      {.type = DeltaType::kDirentDel, .ino = 1, .name = "old"},
      {.type = DeltaType::kXattrDel, .ino = 7, .name = "user.k"},
  };
}

TEST(Records, RoundTripEveryDeltaType) {
  std::string enc;
  const Txn t = sample_txn();
  encode_txn(t, &enc);
  encode_txn(t, &enc);
  size_t pos = 0;
  Txn back;
  ASSERT_TRUE(decode_txn(bytes(enc), &pos, &back));
  EXPECT_EQ(back, t);
  ASSERT_TRUE(decode_txn(bytes(enc), &pos, &back));
  EXPECT_EQ(pos, enc.size());
}

TEST(Records, RefusesEveryTruncation) {
  std::string enc;
  encode_txn(sample_txn(), &enc);
  for (size_t n = 0; n < enc.size(); ++n) {
    size_t pos = 0;
    Txn back;
    EXPECT_FALSE(decode_txn(bytes(enc.substr(0, n)), &pos, &back)) << n;
  }
}

TEST(Records, RefusesBadValues) {
  Txn t(1);
  t[0].type = DeltaType::kExtentMap;
  t[0].ino = 1;
  t[0].a = 100;  // not block aligned
  t[0].c = 4096;
  std::string enc;
  encode_txn(t, &enc);
  size_t pos = 0;
  Txn back;
  EXPECT_FALSE(decode_txn(bytes(enc), &pos, &back));
  enc.clear();
  t[0].a = 0;
  encode_txn(t, &enc);
  enc[8] = 99;  // unknown delta type
  pos = 0;
  EXPECT_FALSE(decode_txn(bytes(enc), &pos, &back));
}

TEST(Batch, RoundTripAndChecksums) {
  std::string payload;
  encode_txn(sample_txn(), &payload);
  encode_txn(sample_txn(), &payload);
  const std::string b = encode_batch(8192, 42, 2, payload, 0x5eed);
  EXPECT_EQ(b.size() % 4096, 0u);
  BatchHeader h;
  std::vector<Txn> txns;
  ASSERT_TRUE(decode_batch(bytes(b), &h, &txns, 0x5eed));
  // The same bytes under another salt (another checkpoint epoch) are refused.
  EXPECT_FALSE(decode_batch(bytes(b), &h, &txns, 0x5eee));
  EXPECT_EQ(h.logical_pos, 8192u);
  EXPECT_EQ(h.first_lsn, 42u);
  ASSERT_EQ(txns.size(), 2u);
  EXPECT_EQ(txns[1], sample_txn());
  for (size_t i : {size_t{0}, size_t{9}, size_t{30}, size_t{70}, payload.size() + 63}) {
    std::string bad = b;
    bad[i] ^= 1;
    EXPECT_FALSE(decode_batch(bytes(bad), &h, &txns, 0x5eed)) << i;
  }
  // Record count claiming more than the payload holds.
  std::string lying = encode_batch(0, 1, 3, payload);
  EXPECT_FALSE(decode_batch(bytes(lying), &h, &txns));
}

TEST(Checkpoint, HeaderRoundTripAndCorruption) {
  CheckpointHeader h{5, 77, 12288, 1 << 20, 333, 0xabcdef, 9, 4, 1 << 22, 1 << 26, 0xfeedbeef};
  std::vector<std::byte> block(4096);
  encode_checkpoint_header(h, block);
  CheckpointHeader back;
  ASSERT_TRUE(decode_checkpoint_header(block, &back));
  EXPECT_EQ(back, h);
  block[20] ^= std::byte{1};
  EXPECT_FALSE(decode_checkpoint_header(block, &back));
}

TEST(Checkpoint, BodyRoundTrip) {
  Model m = Model::make_fresh(5);
  std::vector<VolRange> freed;
  // A directory /d holding a file f with an extent, an xattr, on the orphan list.
  const Txn t = {
      {.type = DeltaType::kInodePut, .ino = 2, .attr = InodeAttr{2, 1, S_IFDIR | 0755, 0, 0, 2, 0, 0, 1, 2, 3, 0}},
      {.type = DeltaType::kDirentPut, .ino = 1, .child = 2, .a = 3, .name = "d"},
      {.type = DeltaType::kInodePut, .ino = 3, .attr = InodeAttr{3, 1, S_IFREG | 0644, 0, 0, 1, 8192, 0, 1, 2, 3, 0}},
      {.type = DeltaType::kDirentPut, .ino = 2, .child = 3, .a = 3, .name = "f"},
      {.type = DeltaType::kExtentMap, .ino = 3, .a = 0, .b = 1 << 22, .c = 8192},
      {.type = DeltaType::kXattrPut, .ino = 3, .name = "user.a", .value = "b"},
      {.type = DeltaType::kOrphanAdd, .ino = 3},
  };
  ASSERT_EQ(m.apply(t, &freed), 0);
  EXPECT_EQ(m.find(3)->parent, 2u) << "a file's hint: the directory that named it";
  const std::string body = encode_checkpoint_body(m);
  auto back = decode_checkpoint_body(bytes(body), m.next_ino);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->dump(), m.dump());
  EXPECT_EQ(back->find(2)->parent, kRootIno);
  EXPECT_EQ(back->find(3)->parent, 2u) << "derived again at load";
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(decode_checkpoint_body(bytes(body.substr(0, n)), m.next_ino).has_value()) << n;
  }
  // An entry naming a missing inode is refused.
  Model broken = Model::make_fresh(5);
  broken.find(kRootIno)->dir->add("ghost", 99);
  EXPECT_FALSE(decode_checkpoint_body(bytes(encode_checkpoint_body(broken)), 100).has_value());
}

}  // namespace
}  // namespace peregrine::meta
