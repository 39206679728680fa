// `peregrine examine` and `peregrine scan` as a user runs them: members made
// by mkfs in a temporary directory, identified one by one (label, UUIDs,
// index, state, last mount and the other members' paths) and found in a
// directory with a stray file, grouped into ready conf sections and fstab
// lines; an incomplete volume is named with what is missing. Neither
// command writes. The mount parts need root and /dev/fuse (else skipped).
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string mkfs(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {peregrine_bin(), "mkfs", "--size", "64M"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << r.describe();
  return r.out;
}

json examine_json(const std::string& member) {
  RunResult r = run({peregrine_bin(), "examine", "--json", member});
  EXPECT_EQ(r.code, 0) << r.describe();
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(doc.is_array() && doc.size() == 1) << r.out;
  return doc.is_array() && !doc.empty() ? doc[0] : json();
}

// The volume UUID `peregrine info` reports for `members` (first line "volume UUID").
std::string volume_uuid(const std::vector<std::string>& members) {
  std::vector<std::string> argv = {peregrine_bin(), "info"};
  argv.insert(argv.end(), members.begin(), members.end());
  RunResult r = run(argv);
  EXPECT_EQ(r.code, 0) << r.describe();
  return r.out.substr(7, 36);
}

std::map<std::string, uint64_t> hashes(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = hash_file(e.path().string());
  return out;
}

TEST(PeregrineExamine, NamesTheVolumeAndThePlaceOfAFreshMember) {
  TempDir dir("peregrine-examine");
  std::vector<std::string> m = {dir / "m0", dir / "m1", dir / "m2"};
  mkfs({"--label", "archive", "--stripe-unit", "64K", m[0], m[1], m[2]});
  const std::string uuid = volume_uuid(m);

  RunResult text = run({peregrine_bin(), "examine", m[1]});
  ASSERT_EQ(text.code, 0) << text.describe();
  EXPECT_TRUE(contains(text.out, m[1] + ":\n")) << text.out;
  EXPECT_TRUE(contains(text.out, "label:            archive\n")) << text.out;
  EXPECT_TRUE(contains(text.out, "volume uuid:      " + uuid + "\n")) << text.out;
  EXPECT_TRUE(contains(text.out, "member:           index 1 of 3")) << text.out;
  EXPECT_TRUE(contains(text.out, "stripe unit:      64 KiB\n")) << text.out;
  EXPECT_TRUE(contains(text.out, "state:            unknown: no mount recorded")) << text.out;

  json j = examine_json(m[1]);
  EXPECT_EQ(j["member"], true);
  EXPECT_EQ(j["label"], "archive");
  EXPECT_EQ(j["volume_uuid"], uuid);
  EXPECT_EQ(j["member_index"], 1);
  EXPECT_EQ(j["member_count"], 3);
  EXPECT_EQ(j["stripe_unit"], 65536);
  EXPECT_EQ(j["state"], "unknown");
  EXPECT_TRUE(j["last_mount"].is_null());
  ASSERT_EQ(j["members"].size(), 3u);
  EXPECT_EQ(j["members"][1]["uuid"], j["member_uuid"]);
  EXPECT_EQ(j["members"][1]["this_member"], true);
  // Every member names the same member list, and itself in it.
  for (size_t i : {0, 2}) {
    json other = examine_json(m[i]);
    EXPECT_EQ(other["member_index"], i);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(other["members"][k]["uuid"], j["members"][k]["uuid"]) << other.dump(2);
      EXPECT_EQ(other["members"][k]["this_member"], k == i) << other.dump(2);
    }
  }
}

TEST(PeregrineExamine, SaysWhatANonMemberIs) {
  TempDir dir("peregrine-examine");
  std::string stray = dir / "stray";
  ASSERT_TRUE(write_file(stray, pattern(1 << 20, 7)));
  RunResult r = run({peregrine_bin(), "examine", stray});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, stray + ":\n  not a peregrine member (no peregrine superblock)\n")) << r.describe();

  // A filesystem libblkid knows is named.
  std::string ext4 = dir / "ext4.img";
  RunResult made = run({"mkfs.ext4", "-q", "-F", ext4, "8M"});
  if (made.code != 0) GTEST_SKIP() << "mkfs.ext4 unavailable: " << made.describe();
  r = run({peregrine_bin(), "examine", ext4});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "not a peregrine member (no peregrine superblock); libblkid finds an ext4 filesystem"))
      << r.describe();
}

// After a mount: when and where it was mounted, every member's path then,
// and clean or dirty as the daemon left it.
TEST(PeregrineExamine, ShowsTheLastMountThePathsAndCleanOrDirty) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Volume v(3);
  ASSERT_EQ(v.mkfs({"--label", "lastmount"}).code, 0);
  const time_t before = ::time(nullptr);
  RunResult m = v.mount();
  ASSERT_EQ(m.code, 0) << m.describe();

  json j = examine_json(v.members()[2]);
  EXPECT_EQ(j["state"], "mounted") << j.dump(2);
  ASSERT_TRUE(j["last_mount"].is_object()) << j.dump(2);
  EXPECT_EQ(j["last_mount"]["mountpoint"], v.mountpoint());
  EXPECT_GE(j["last_mount"]["time"].get<int64_t>(), before);
  EXPECT_TRUE(j["last_mount"]["unmount_time"].is_null());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(j["members"][i]["last_path"], v.members()[i]) << j.dump(2);

  int status = v.unmount();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  j = examine_json(v.members()[0]);
  EXPECT_EQ(j["state"], "clean") << j.dump(2);
  EXPECT_FALSE(j["last_mount"]["unmount_time"].is_null()) << j.dump(2);
  RunResult text = run({peregrine_bin(), "examine", v.members()[0]});
  EXPECT_TRUE(contains(text.out, "state:            clean: unmounted cleanly ")) << text.out;
  EXPECT_TRUE(contains(text.out, "on " + v.mountpoint())) << text.out;
  EXPECT_TRUE(contains(text.out, "    1  " + examine_json(v.members()[1])["member_uuid"].get<std::string>() + "  " +
                                     v.members()[1] + "\n"))
      << text.out;

  // A daemon that dies leaves the volume dirty.
  ASSERT_EQ(v.mount().code, 0);
  v.kill9();  // SIGKILL, then the dead mount is detached
  j = examine_json(v.members()[1]);
  EXPECT_EQ(j["state"], "dirty") << j.dump(2);
  EXPECT_TRUE(contains(j["state_detail"].get<std::string>(), "not unmounted cleanly")) << j.dump(2);
}

TEST(PeregrineScan, GroupsTwoVolumesOfADirectoryIntoConfAndFstabAndSkipsAStrayFile) {
  TempDir dir("peregrine-scan");
  // Index order differs from name order for the second volume: b2 is member 0.
  mkfs({"--label", "alpha", dir / "a0", dir / "a1"});
  mkfs({dir / "b2", dir / "b0", dir / "b1"});
  ASSERT_TRUE(write_file(dir / "stray", pattern(600 << 10, 3)));
  const std::string b_uuid = volume_uuid({dir / "b0", dir / "b1", dir / "b2"});
  const std::string b_name = "vol-" + b_uuid.substr(0, 8);
  auto before = hashes(dir.path());

  RunResult r = run({peregrine_bin(), "scan", dir.path()});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "[volume.alpha]\nmembers = [\"" + (dir / "a0") + "\", \"" + (dir / "a1") + "\"]\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "[volume." + b_name + "]\nmembers = [\"" + (dir / "b2") + "\", \"" + (dir / "b0") +
                                  "\", \"" + (dir / "b1") + "\"]\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\n" + (dir / "a0") + "," + (dir / "a1") + "  /mnt/alpha  peregrine  nofail  0  0\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\n" + (dir / "b2") + "," + (dir / "b0") + "," + (dir / "b1") + "  /mnt/" + b_name +
                                  "  peregrine  nofail  0  0\n"))
      << r.out;
  EXPECT_FALSE(contains(r.out + r.err, "stray")) << r.describe();
  EXPECT_EQ(hashes(dir.path()), before) << "scan wrote to a file";

  // The conf sections are ready to use: the config loads, and each volume
  // assembles from the members it lists.
  RunResult conf = run({peregrine_bin(), "scan", "--conf", dir.path()});
  ASSERT_EQ(conf.code, 0) << conf.describe();
  EXPECT_FALSE(contains(conf.out, "peregrine  nofail")) << conf.out;
  ASSERT_TRUE(write_file(dir / "scanned.conf", conf.out));
  for (const std::string& name : {std::string("alpha"), b_name}) {
    RunResult check = run({peregrine_bin(), "config", "check", dir / "scanned.conf", "--volume", name});
    EXPECT_EQ(check.code, 0) << name << ": " << check.describe();
  }

  RunResult fstab = run({peregrine_bin(), "scan", "--fstab", dir.path()});
  ASSERT_EQ(fstab.code, 0) << fstab.describe();
  EXPECT_FALSE(contains(fstab.out, "[volume.")) << fstab.out;
}

TEST(PeregrineScan, NamesTheMissingMembersOfAnIncompleteVolume) {
  TempDir dir("peregrine-scan");
  mkfs({"--label", "partial", dir / "p0", dir / "p1", dir / "p2"});
  std::string missing_uuid = examine_json(dir / "p1")["member_uuid"];
  ASSERT_EQ(::rename((dir / "p1").c_str(), (dir.path() + "-p1-elsewhere").c_str()), 0);
  RunResult r = run({peregrine_bin(), "scan", dir.path()});
  ::unlink((dir.path() + "-p1-elsewhere").c_str());
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "(partial) is incomplete: 1 of 3 members missing")) << r.describe();
  EXPECT_TRUE(contains(r.out, "# INCOMPLETE: 1 member missing:\n#   index 1 (member " + missing_uuid)) << r.out;
  EXPECT_FALSE(contains(r.out, "[volume.partial]")) << "an incomplete volume got a conf section:\n" << r.out;

  RunResult j = run({peregrine_bin(), "scan", "--json", dir.path()});
  EXPECT_EQ(j.code, 1) << j.describe();
  json doc = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << j.out;
  ASSERT_EQ(doc["volumes"].size(), 1u) << j.out;
  EXPECT_EQ(doc["volumes"][0]["complete"], false);
  EXPECT_EQ(doc["volumes"][0]["members"][1]["paths"], json::array());
  EXPECT_EQ(doc["volumes"][0]["members"][2]["paths"], json::array({dir / "p2"}));
}

TEST(PeregrineScan, HelpAndExamineHelpNameTheirValues) {
  for (const char* cmd : {"examine", "scan"}) {
    RunResult r = run({peregrine_bin(), cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.describe();
    EXPECT_TRUE(contains(r.out, std::string("usage: peregrine ") + cmd)) << r.out;
    EXPECT_FALSE(contains(r.out, " arg ") || contains(r.out, " arg\n")) << r.out;
  }
}

}  // namespace
}  // namespace peregrine::fstest
