// The one -o parser (mount_flags.h): every generic option a user types is
// sorted into settings, kernel flags and daemon flags, or refused with the
// reason and the closest known name.
#include <gtest/gtest.h>

#include "peregrine/config/mount_flags.h"

namespace peregrine::config {
namespace {

MountRequest parsed(std::string_view text) {
  auto r = parse_mount_options(text);
  EXPECT_TRUE(r) << text << ": " << r.status().message();
  return r ? *r : MountRequest{};
}

std::string refusal(std::string_view text) {
  auto r = parse_mount_options(text);
  EXPECT_FALSE(r) << text << " was accepted";
  return r ? std::string() : r.status().message();
}

TEST(MountFlags, SortsSettingsKernelFlagsAndDaemonFlags) {
  MountRequest r = parsed("ro,noexec,fuse.cache=writeback,nosuid,allow_other,noatime,drive.cpus=0,1,nodev");
  EXPECT_EQ(r.settings, (std::vector<std::string>{"fuse.cache=writeback", "fuse.allow_other", "fuse.atime=noatime",
                                                  "drive.cpus=0,1"}));
  EXPECT_EQ(r.kernel, (std::vector<std::string>{"noexec", "nosuid", "noatime", "nodev"}));
  EXPECT_TRUE(r.is_read_only());
  EXPECT_FALSE(r.norecovery);
  EXPECT_EQ(r.to_string(),
            "fuse.cache=writeback,fuse.allow_other,fuse.atime=noatime,drive.cpus=0,1,ro,noexec,nosuid,noatime,nodev");
}

TEST(MountFlags, DiscardAndNodiscardSetTheDiscardSetting) {
  EXPECT_EQ(parsed("discard").settings, (std::vector<std::string>{"fuse.discard=true"}));
  EXPECT_EQ(parsed("nodiscard").settings, (std::vector<std::string>{"fuse.discard=false"}));
}

TEST(MountFlags, AclAndNoaclSetTheAclSetting) {
  EXPECT_EQ(parsed("acl").settings, (std::vector<std::string>{"fuse.acl=true"}));
  EXPECT_EQ(parsed("noacl").settings, (std::vector<std::string>{"fuse.acl=false"}));
  // The later one wins, as with -o fuse.acl=... given twice.
  EXPECT_EQ(parsed("acl,noacl").settings, (std::vector<std::string>{"fuse.acl=true", "fuse.acl=false"}));
}

TEST(MountFlags, AtimeFlagsSetTheDaemonsRule) {
  // The kernel keeps no access times for FUSE files: the daemon does.
  EXPECT_EQ(parsed("strictatime").settings, (std::vector<std::string>{"fuse.atime=strictatime"}));
  EXPECT_EQ(parsed("norelatime").settings, (std::vector<std::string>{"fuse.atime=strictatime"}));
  EXPECT_EQ(parsed("relatime").settings, (std::vector<std::string>{"fuse.atime=relatime"}));
  EXPECT_TRUE(parsed("relatime").kernel.empty());  // libfuse 3.14 refuses it
  MountRequest noatime = parsed("noatime");
  EXPECT_EQ(noatime.settings, (std::vector<std::string>{"fuse.atime=noatime"}));
  EXPECT_EQ(noatime.kernel, (std::vector<std::string>{"noatime"}));
}

TEST(MountFlags, FstabBookkeepingIsAcceptedAndDropped) {
  MountRequest r = parsed(
      "defaults,auto,noauto,nofail,_netdev,user,nouser,users,owner,group,user=alice,default_permissions,"
      "x-systemd.requires=local-fs.target,x-systemd.device-timeout=5,comment=x,rw");
  EXPECT_TRUE(r.settings.empty());
  EXPECT_TRUE(r.kernel.empty());
  EXPECT_FALSE(r.is_read_only());
  EXPECT_EQ(r.to_string(), "");
}

TEST(MountFlags, LaterRoOrRwWinsAcrossVolumeAndCommandLine) {
  MountRequest volume = parsed("ro,noatime");
  MountRequest command_line = parsed("rw");
  volume.add(command_line);
  EXPECT_FALSE(volume.is_read_only());
  EXPECT_EQ(volume.kernel, std::vector<std::string>{"noatime"});
  MountRequest neither = parsed("noexec");
  MountRequest again = parsed("ro");
  again.add(neither);  // says nothing about ro/rw: the earlier ro stays
  EXPECT_TRUE(again.is_read_only());
}

// Dotted keys are settings: apply_overrides checks them (and refuses an
// unknown one with the closest key), as for the conf file.
TEST(MountFlags, DottedKeysAreLeftToTheSettingsCheck) {
  EXPECT_EQ(parsed("fuse.cahce=direct").settings, std::vector<std::string>{"fuse.cahce=direct"});
}

TEST(MountFlags, ConfigFileIsTakenOut) {
  MountRequest r = parsed("config=/tmp/x.conf,fuse.cache=direct");
  EXPECT_EQ(r.config_file, "/tmp/x.conf");
  EXPECT_EQ(r.to_string(), "fuse.cache=direct");
}

TEST(MountFlags, NorecoveryNeedsRo) {
  MountRequest r = parsed("norecovery");
  Status s = check_mount_request(r);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("ro,norecovery"), std::string::npos) << s.message();
  EXPECT_TRUE(check_mount_request(parsed("ro,norecovery")));
  EXPECT_TRUE(parsed("ro,noload").norecovery);
}

TEST(MountFlags, UnknownOptionsAreRefusedWithTheClosestName) {
  EXPECT_NE(refusal("bogus=1").find("-o bogus=1: unknown mount option"), std::string::npos) << refusal("bogus=1");
  EXPECT_NE(refusal("noexce").find("did you mean noexec?"), std::string::npos) << refusal("noexce");
  EXPECT_NE(refusal("allow_othr").find("did you mean allow_other?"), std::string::npos);
  EXPECT_NE(refusal("cache=writeback").find("did you mean fuse.cache?"), std::string::npos)
      << refusal("cache=writeback");
  EXPECT_NE(refusal("ro=1").find("ro takes no value"), std::string::npos) << refusal("ro=1");
}

TEST(MountFlags, RemountAndUnsupportedFlagsSayWhy) {
  // peregrine mount cannot remount; mount(8) through mount.peregrine can.
  EXPECT_NE(refusal("remount,rw").find("only through mount(8) (mount -o remount,ro DIR)"), std::string::npos)
      << refusal("remount,rw");
  EXPECT_NE(refusal("mand").find("mandatory locks"), std::string::npos);
  EXPECT_NE(refusal("nosymfollow").find("not supported"), std::string::npos);
}

TEST(MountFlags, SloppyKeepsUnknownOptionsAside) {
  auto r = parse_mount_options("bogus,noatime", "-o", /*sloppy=*/true);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->unknown, std::vector<std::string>{"bogus"});
  EXPECT_EQ(r->to_string(), "fuse.atime=noatime,noatime");  // the daemon's rule, and the kernel's flag
}

TEST(MountFlags, MessagesNameWhereTheOptionCameFrom) {
  auto r = parse_mount_options("noatime,bogus", "vol.conf:4 (volume.data.options)");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message().rfind("vol.conf:4 (volume.data.options): bogus: unknown mount option", 0), 0u)
      << r.status().message();
}

}  // namespace
}  // namespace peregrine::config
