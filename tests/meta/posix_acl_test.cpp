// The POSIX ACL value type against the kernel's rules (fs/posix_acl.c):
// decoding refuses what posix_acl_valid() refuses, and the mode/ACL
// arithmetic gives what ext4 gives for the same ACL and mode. Then the
// metadata layer with Options::posix_acl: inheritance of default ACLs,
// chmod and setxattr keeping the mode and the ACL in step, and ACLs that
// survive a crash.
#include "peregrine/meta/posix_acl.h"

#include <sys/stat.h>

#include <cerrno>

#include "meta_test_util.h"

namespace peregrine::meta {
namespace {

using E = PosixAcl::Entry;
constexpr uint32_t kNone = 0xffffffff;

std::string encode(const std::vector<E>& entries) {
  std::string out("\x02\0\0\0", 4);
  for (const E& e : entries) {
    for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((e.tag >> (8 * i)) & 0xff));
    for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((e.perm >> (8 * i)) & 0xff));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((e.id >> (8 * i)) & 0xff));
  }
  return out;
}

PosixAcl acl(const std::vector<E>& entries) {
  auto a = PosixAcl::decode(encode(entries));
  EXPECT_TRUE(a.has_value());
  return a ? *a : PosixAcl{};
}

// u::rw-,u:1000:rwx,g::r--,g:50:rw-,m::rwx,o::---  (setfacl's text form)
std::vector<E> extended() {
  return {{PosixAcl::kUserObj, 6, kNone}, {PosixAcl::kUser, 7, 1000},  {PosixAcl::kGroupObj, 4, kNone},
          {PosixAcl::kGroup, 6, 50},      {PosixAcl::kMask, 7, kNone}, {PosixAcl::kOther, 0, kNone}};
}

std::vector<E> minimal(uint16_t u, uint16_t g, uint16_t o) {
  return {{PosixAcl::kUserObj, u, kNone}, {PosixAcl::kGroupObj, g, kNone}, {PosixAcl::kOther, o, kNone}};
}

TEST(PosixAcl, DecodeEncodeRoundTrip) {
  const std::string value = encode(extended());
  auto a = PosixAcl::decode(value);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->encode(), value);
  EXPECT_EQ(a->entries(), extended());
}

TEST(PosixAcl, DecodeRefusesWhatTheKernelRefuses) {
  EXPECT_FALSE(PosixAcl::decode(""));
  EXPECT_FALSE(PosixAcl::decode(std::string("\x01\0\0\0", 4) + encode(minimal(6, 4, 4)).substr(4)));  // version
  EXPECT_FALSE(PosixAcl::decode(encode(minimal(6, 4, 4)) + "x"));                                     // torn entry
  EXPECT_FALSE(PosixAcl::decode(encode({{PosixAcl::kUserObj, 6, kNone}, {PosixAcl::kOther, 4, kNone}})));
  EXPECT_FALSE(PosixAcl::decode(encode({{PosixAcl::kUserObj, 6, kNone},  // named user, no mask
                                        {PosixAcl::kUser, 6, 7},
                                        {PosixAcl::kGroupObj, 4, kNone},
                                        {PosixAcl::kOther, 4, kNone}})));
  // The kernel does not order named entries by id: neither does decode.
  EXPECT_TRUE(PosixAcl::decode(encode({{PosixAcl::kUserObj, 6, kNone},
                                       {PosixAcl::kUser, 6, 9},
                                       {PosixAcl::kUser, 6, 7},
                                       {PosixAcl::kGroupObj, 4, kNone},
                                       {PosixAcl::kMask, 6, kNone},
                                       {PosixAcl::kOther, 4, kNone}})));
  EXPECT_FALSE(PosixAcl::decode(encode({{PosixAcl::kUserObj, 6, kNone},  // two masks
                                        {PosixAcl::kGroupObj, 4, kNone},
                                        {PosixAcl::kMask, 6, kNone},
                                        {PosixAcl::kMask, 6, kNone},
                                        {PosixAcl::kOther, 4, kNone}})));
  EXPECT_FALSE(PosixAcl::decode(encode({{PosixAcl::kGroupObj, 4, kNone},  // tags out of order
                                        {PosixAcl::kUserObj, 6, kNone},
                                        {PosixAcl::kOther, 4, kNone}})));
  EXPECT_FALSE(PosixAcl::decode(encode(minimal(8, 4, 4))));  // a permission bit past rwx
  EXPECT_FALSE(PosixAcl::decode(encode({{PosixAcl::kUserObj, 6, kNone},
                                        {PosixAcl::kGroupObj, 4, kNone},
                                        {0x40, 4, kNone},
                                        {PosixAcl::kOther, 4, kNone}})));
}

TEST(PosixAcl, AMinimalAclIsTheMode) {
  uint32_t mode = S_IFREG | S_ISUID | 0600;
  EXPECT_FALSE(acl(minimal(6, 4, 4)).extends_mode(&mode));
  EXPECT_EQ(mode, S_IFREG | S_ISUID | 0644u);  // type and suid kept
}

TEST(PosixAcl, AnExtendedAclShowsItsMaskAsTheGroupBits) {
  uint32_t mode = S_IFREG | 0600;
  EXPECT_TRUE(acl(extended()).extends_mode(&mode));
  EXPECT_EQ(mode, S_IFREG | 0670u);
}

TEST(PosixAcl, ChmodSetsOwnerMaskAndOtherAndKeepsNamedEntries) {
  PosixAcl a = acl(extended());
  a.chmod(0640);
  std::vector<E> want = extended();
  want[0].perm = 6;  // owner
  want[4].perm = 4;  // mask, not the owning group
  want[5].perm = 0;  // other
  EXPECT_EQ(a.entries(), want);
  PosixAcl m = acl(minimal(7, 7, 7));
  m.chmod(0751);
  EXPECT_EQ(m.entries(), minimal(7, 5, 1));  // no mask: the owning group takes the group bits
}

TEST(PosixAcl, CreateMasqCutsTheAclAndTheModeToWhatBothGrant) {
  // Default u::rwx,u:1000:rwx,g::r-x,g:50:rw-,m::rwx,o::r-x; a file created with 0666.
  PosixAcl a = acl({{PosixAcl::kUserObj, 7, kNone},
                    {PosixAcl::kUser, 7, 1000},
                    {PosixAcl::kGroupObj, 5, kNone},
                    {PosixAcl::kGroup, 6, 50},
                    {PosixAcl::kMask, 7, kNone},
                    {PosixAcl::kOther, 5, kNone}});
  uint32_t mode = S_IFREG | 0666;
  EXPECT_TRUE(a.create_masq(&mode));
  EXPECT_EQ(mode, S_IFREG | 0664u);   // what ext4 gives: rw- rw- r--
  EXPECT_EQ(a.entries()[0].perm, 6);  // owner
  EXPECT_EQ(a.entries()[1].perm, 7);  // named entries are kept as they are
  EXPECT_EQ(a.entries()[4].perm, 6);  // mask
  EXPECT_EQ(a.entries()[5].perm, 4);  // other
  // A minimal default ACL gives a minimal ACL: nothing to store.
  PosixAcl m = acl(minimal(7, 5, 0));
  uint32_t dmode = S_IFDIR | 0777;
  EXPECT_FALSE(m.create_masq(&dmode));
  EXPECT_EQ(dmode, S_IFDIR | 0750u);
}

// ---- the metadata layer with Options::posix_acl -----------------------------

class MetadataAclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io = test::new_volume(g);
    md = test::mount_ok(*io, g, options());
    ASSERT_NE(md, nullptr);
  }
  static Options options() {
    Options o = test::test_options();
    o.posix_acl = true;
    return o;
  }
  InodeAttr attr(Ino ino) {
    InodeAttr a;
    EXPECT_EQ(md->getattr(ino, &a), 0);
    return a;
  }
  std::string xattr(Ino ino, std::string_view name) {
    std::string v;
    int rc = md->getxattr(ino, name, &v);
    return rc == 0 ? v : "errno " + std::to_string(-rc);
  }
  Geometry g = test::small_geometry();
  std::unique_ptr<MemoryVolumeIo> io;
  std::unique_ptr<Metadata> md;
  Cred cred{1000, 1000, 022};
};

TEST_F(MetadataAclTest, WithoutADefaultAclTheUmaskApplies) {
  InodeAttr f, d;
  ASSERT_EQ(md->create(kRootIno, "f", 0666, cred, &f), 0);
  ASSERT_EQ(md->mkdir(kRootIno, "d", 0777, cred, &d), 0);
  EXPECT_EQ(f.mode, S_IFREG | 0644u);
  EXPECT_EQ(d.mode, S_IFDIR | 0755u);
  EXPECT_EQ(xattr(f.ino, kAclAccessXattr), "errno " + std::to_string(ENODATA));
}

TEST_F(MetadataAclTest, NewInodesInheritTheDefaultAclNotTheUmask) {
  InodeAttr d, f, sub, fifo;
  ASSERT_EQ(md->mkdir(kRootIno, "d", 0755, cred, &d), 0);
  const std::string def = encode({{PosixAcl::kUserObj, 7, kNone},
                                  {PosixAcl::kUser, 7, 2000},
                                  {PosixAcl::kGroupObj, 7, kNone},
                                  {PosixAcl::kMask, 7, kNone},
                                  {PosixAcl::kOther, 7, kNone}});
  ASSERT_EQ(md->setxattr(d.ino, kAclDefaultXattr, def, 0), 0);
  Cred strict{1000, 1000, 077};  // ignored below a default ACL
  ASSERT_EQ(md->create(d.ino, "f", 0666, strict, &f), 0);
  ASSERT_EQ(md->mkdir(d.ino, "sub", 0777, strict, &sub), 0);
  ASSERT_EQ(md->mknod(d.ino, "p", S_IFIFO | 0640, 0, strict, &fifo), 0);
  EXPECT_EQ(f.mode, S_IFREG | 0666u);
  EXPECT_EQ(sub.mode, S_IFDIR | 0777u);
  EXPECT_EQ(fifo.mode, S_IFIFO | 0640u);
  auto facl = PosixAcl::decode(xattr(f.ino, kAclAccessXattr));
  ASSERT_TRUE(facl);
  EXPECT_EQ(facl->entries()[1], (E{PosixAcl::kUser, 7, 2000}));  // named entries are not cut
  EXPECT_EQ(facl->entries()[3].perm, 6);                         // the mask cut to the file's group bits
  // A directory passes the default ACL on unchanged, and has it as its access ACL too.
  EXPECT_EQ(xattr(sub.ino, kAclDefaultXattr), def);
  EXPECT_EQ(xattr(sub.ino, kAclAccessXattr), def);
  // Files get no default ACL.
  EXPECT_EQ(xattr(f.ino, kAclDefaultXattr), "errno " + std::to_string(ENODATA));
}

TEST_F(MetadataAclTest, SettingAnAccessAclSetsTheModeAndAMinimalOneIsNotKept) {
  InodeAttr f;
  ASSERT_EQ(md->create(kRootIno, "f", 0600, cred, &f), 0);
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(minimal(6, 4, 4)), 0), 0);
  EXPECT_EQ(attr(f.ino).mode, S_IFREG | 0644u);
  EXPECT_EQ(xattr(f.ino, kAclAccessXattr), "errno " + std::to_string(ENODATA));
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(extended()), 0), 0);
  EXPECT_EQ(attr(f.ino).mode, S_IFREG | 0670u);
  EXPECT_EQ(xattr(f.ino, kAclAccessXattr), encode(extended()));
  // Back to a minimal ACL (setfacl -b): the stored one goes.
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(minimal(6, 0, 0)), 0), 0);
  EXPECT_EQ(attr(f.ino).mode, S_IFREG | 0600u);
  EXPECT_EQ(xattr(f.ino, kAclAccessXattr), "errno " + std::to_string(ENODATA));
  EXPECT_EQ(md->setxattr(f.ino, kAclAccessXattr, "garbage", 0), -EINVAL);
  // Removing an ACL that is not there is no error (setfacl -k on any directory).
  EXPECT_EQ(md->removexattr(kRootIno, kAclDefaultXattr), 0);
}

TEST_F(MetadataAclTest, SettingAnAccessAclTakesSgidWhenTheCallerMayNotKeepIt) {
  InodeAttr f;
  ASSERT_EQ(md->create(kRootIno, "f", 02770, cred, &f), 0);
  ASSERT_EQ(attr(f.ino).mode, S_IFREG | 02750u);
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(minimal(7, 7, 0)), 0, 0), 0);
  EXPECT_EQ(attr(f.ino).mode, S_IFREG | 02770u);
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(minimal(7, 5, 0)), 0, S_ISGID), 0);
  EXPECT_EQ(attr(f.ino).mode, S_IFREG | 0750u);
}

TEST_F(MetadataAclTest, ChmodRewritesTheAccessAcl) {
  InodeAttr f, out;
  ASSERT_EQ(md->create(kRootIno, "f", 0600, cred, &f), 0);
  ASSERT_EQ(md->setxattr(f.ino, kAclAccessXattr, encode(extended()), 0), 0);
  SetAttrIn in;
  in.valid = SetAttrIn::kMode;
  in.mode = 0604;
  ASSERT_EQ(md->setattr(f.ino, in, &out), 0);
  auto a = PosixAcl::decode(xattr(f.ino, kAclAccessXattr));
  ASSERT_TRUE(a);
  std::vector<E> want = extended();
  want[0].perm = 6;
  want[4].perm = 0;  // the mask takes the group bits; the named entries stay
  want[5].perm = 4;
  EXPECT_EQ(a->entries(), want);
  EXPECT_EQ(out.mode, S_IFREG | 0604u);
}

TEST_F(MetadataAclTest, AclsSurviveACrash) {
  InodeAttr d, f;
  ASSERT_EQ(md->mkdir(kRootIno, "d", 0755, cred, &d), 0);
  ASSERT_EQ(md->setxattr(d.ino, kAclDefaultXattr, encode(extended()), 0), 0);
  ASSERT_EQ(md->create(d.ino, "f", 0666, cred, &f), 0);
  const std::string inherited = xattr(f.ino, kAclAccessXattr);
  ASSERT_TRUE(PosixAcl::decode(inherited));
  ASSERT_EQ(md->sync(), 0);
  auto img = io->crash_image(MemoryVolumeIo::CrashPolicy::kUnflushedLost);
  md.reset();
  auto md2 = test::mount_ok(*img, g, options());
  ASSERT_NE(md2, nullptr);
  std::string v;
  ASSERT_EQ(md2->getxattr(d.ino, kAclDefaultXattr, &v), 0);
  EXPECT_EQ(v, encode(extended()));
  ASSERT_EQ(md2->getxattr(f.ino, kAclAccessXattr, &v), 0);
  EXPECT_EQ(v, inherited);
  InodeAttr fa;
  ASSERT_EQ(md2->getattr(f.ino, &fa), 0);
  EXPECT_EQ(fa.mode, f.mode);
}

TEST(MetadataWithoutAcl, AclNamesAreOrdinaryXattrsAndTheUmaskAlwaysApplies) {
  Geometry g = test::small_geometry();
  auto io = test::new_volume(g);
  auto md = test::mount_ok(*io, g);
  ASSERT_NE(md, nullptr);
  InodeAttr d, f;
  ASSERT_EQ(md->mkdir(kRootIno, "d", 0777, Cred{0, 0, 022}, &d), 0);
  ASSERT_EQ(md->setxattr(d.ino, kAclDefaultXattr, encode(minimal(7, 7, 7)), 0), 0);
  ASSERT_EQ(md->create(d.ino, "f", 0666, Cred{0, 0, 022}, &f), 0);
  EXPECT_EQ(f.mode, S_IFREG | 0644u);
  EXPECT_EQ(md->removexattr(f.ino, kAclAccessXattr), -ENODATA);
}

}  // namespace
}  // namespace peregrine::meta
