// The mount tests never read the machine's /etc/peregrine/peregrine.conf:
// a user's own settings there (low_watermark_per_drive = 4 failed four
// member-fault tests that mount with -o high_watermark_per_drive=1) must not
// change what a test mounts.
//
// The proof puts a hostile file at /etc/peregrine/peregrine.conf without
// touching the machine's /etc: this test (a process of its own under ctest)
// moves into a private mount namespace and lays an overlay over /etc whose
// writes go to a temporary directory. There it first shows that the file is
// read and changes a mount when PEREGRINE_CONFIG is unset (so the check
// below is not vacuous), then mounts as every test does.
#include <sched.h>
#include <sys/mount.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using nlohmann::json;

constexpr const char* kSystemConf = "/etc/peregrine/peregrine.conf";

// What a user's own file may hold: each line would change or refuse a test mount.
constexpr const char* kHostileConf =
    "# a user's own settings\n"
    "[engine]\n"
    "low_watermark_per_drive = 4\n"
    "[drive]\n"
    "queue_depth = 3\n";

// /etc in a private mount namespace of this process, an overlay whose
// changes land in `dir`; undone (the overlay detached) on destruction.
class PrivateEtc {
 public:
  explicit PrivateEtc(const TempDir& dir) {
    const std::string upper = dir / "upper", work = dir / "work";
    ::mkdir(upper.c_str(), 0755);
    ::mkdir(work.c_str(), 0755);
    if (::unshare(CLONE_NEWNS) != 0) {
      why_ = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
      return;
    }
    // Nothing done in this namespace may reach the machine's mount table.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      why_ = std::string("making / private: ") + std::strerror(errno);
      return;
    }
    const std::string data = "lowerdir=/etc,upperdir=" + upper + ",workdir=" + work;
    if (::mount("overlay", "/etc", "overlay", 0, data.c_str()) != 0) {
      why_ = std::string("overlay on /etc (needs overlayfs): ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~PrivateEtc() {
    if (mounted_) ::umount2("/etc", MNT_DETACH);
  }
  PrivateEtc(const PrivateEtc&) = delete;
  PrivateEtc& operator=(const PrivateEtc&) = delete;
  const std::string& why_not() const { return why_; }

 private:
  std::string why_;
  bool mounted_ = false;
};

// The queue depth of each drive of the mount, from `peregrine stats --json`.
std::vector<int> queue_depths(const Volume& v) {
  RunResult r = run({peregrine_bin(), "stats", "--json", v.mountpoint()});
  EXPECT_EQ(r.code, 0) << r.describe();
  std::vector<int> out;
  if (r.code != 0) return out;
  const json doc = json::parse(r.out);
  for (const json& d : doc.at("drives")) out.push_back(d.at("queue_depth").get<int>());
  return out;
}

// Runs `f` with PEREGRINE_CONFIG unset, as a user's shell would have it.
template <typename F>
auto without_variable(F f) {
  ::unsetenv("PEREGRINE_CONFIG");
  auto result = f();
  ::setenv("PEREGRINE_CONFIG", kTestConfig, 1);
  return result;
}

TEST(HermeticConfig, HostileSystemConfigDoesNotChangeATestMount) {
  if (std::string why = mount_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  // Every peregrine this test suite starts reads the test's file instead.
  ASSERT_STREQ(std::getenv("PEREGRINE_CONFIG"), kTestConfig);

  TempDir overlay("peregrine-etc");
  PrivateEtc etc(overlay);
  if (!etc.why_not().empty()) GTEST_SKIP() << "cannot give the test a private /etc: " << etc.why_not();
  const std::string machine_view = "/proc/1/root" + std::string(kSystemConf);  // pid 1 keeps the machine's namespace
  const std::string machine_before = read_file(machine_view);
  ::mkdir("/etc/peregrine", 0755);
  ASSERT_TRUE(write_file(kSystemConf, kHostileConf));
  ASSERT_EQ(read_file(machine_view), machine_before) << "the machine's " << kSystemConf << " changed";

  Volume v;
  ASSERT_EQ(v.mkfs().code, 0);

  // Control: without the variable, the hostile file is read...
  RunResult check = without_variable([] { return run({peregrine_bin(), "config", "check"}); });
  ASSERT_EQ(check.code, 0) << check.describe();
  EXPECT_NE(check.out.find("queue_depth = 3  # /etc/peregrine/peregrine.conf:5"), std::string::npos) << check.out;
  // ...refuses the member-fault tests' options, as it did on a user's machine...
  RunResult refused = without_variable([&] { return v.mount({"-o", "engine.high_watermark_per_drive=1"}); });
  EXPECT_EQ(refused.code, 1) << refused.describe();
  EXPECT_NE(refused.err.find("/etc/peregrine/peregrine.conf:3: engine.low_watermark_per_drive = 4: above "
                             "engine.high_watermark_per_drive = 1 (command line -o)"),
            std::string::npos)
      << refused.describe();
  // ...and changes a mount: every drive gets its queue depth.
  RunResult changed = without_variable([&] { return v.mount(); });
  ASSERT_EQ(changed.code, 0) << changed.describe();
  EXPECT_EQ(queue_depths(v), std::vector<int>(v.members().size(), 3));
  ASSERT_EQ(v.unmount(), 0);

  // As every test mounts: the file is not read.
  RunResult r = v.mount({"-o", "engine.high_watermark_per_drive=1"});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(mount_at(v.mountpoint()));
  // The built-in default for member files (drive.queue_depth = auto).
  EXPECT_EQ(queue_depths(v), std::vector<int>(v.members().size(), 32));
  std::string data = pattern(1 << 20, 24);
  ASSERT_TRUE(write_file(v.at("f"), data));
  EXPECT_EQ(read_file(v.at("f")), data);
  EXPECT_EQ(v.unmount(), 0);
}

}  // namespace
}  // namespace peregrine::fstest
