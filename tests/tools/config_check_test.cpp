// A config file with a value of the wrong type, as the commands meet it:
// `peregrine config check FILE` and `peregrine mount --config FILE ...`
// print one line naming the file, the line, the key, the value and what is
// allowed, and exit 1. Before issue 24 a boolean where an integer belongs
// killed both with std::bad_variant_access (exit 134, SIGABRT). Nothing is
// mounted: the file is refused before the members are opened, so this needs
// neither root nor /dev/fuse.
#include <fstream>

#include "fs_test_util.h"
#include "peregrine/config/options.h"
#include "toml_samples.h"

namespace peregrine::fstest {
namespace {

using config::Option;
using config::options;
using config::testing::own_type;
using config::testing::toml_samples;
using config::testing::TomlSample;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Writes FILE with `key = value` on line 2 of its table.
std::string write_conf(const TempDir& dir, const Option& o, const TomlSample& v) {
  std::string path = dir / "bad.conf";
  std::ofstream(path, std::ios::trunc) << "[" << o.table() << "]\n" << o.name() << " = " << v.text << "\n";
  return path;
}

std::string expected_refusal(const std::string& path, const Option& o, const TomlSample& v) {
  return path + ":2: " + std::string(o.key) + " = " + v.shown + ": wrong type (" + v.type +
         "); allowed: " + o.allowed();
}

TEST(ConfigCheckCommand, EveryWrongTypeIsRefusedWithExitOne) {
  TempDir dir("peregrine-config-check");
  for (const Option& o : options()) {
    for (const TomlSample& v : toml_samples()) {
      if (v.type == own_type(o)) continue;
      std::string conf = write_conf(dir, o, v);
      RunResult r = run({peregrine_bin(), "config", "check", conf});
      EXPECT_EQ(r.code, 1) << o.key << " = " << v.text << ": " << r.describe();
      EXPECT_TRUE(r.err.starts_with("peregrine config: " + expected_refusal(conf, o, v))) << r.describe();
      EXPECT_EQ(r.out, "") << "printed a configuration for a refused file: " << r.describe();
    }
  }
}

TEST(ConfigCheckCommand, MountRefusesEveryWrongTypeBeforeTouchingTheMembers) {
  TempDir dir("peregrine-config-check");
  const std::string member = dir / "m0";  // never created: the file is refused first
  const std::string mnt = dir / "mnt";
  for (const Option& o : options()) {
    for (const TomlSample& v : toml_samples()) {
      if (v.type == own_type(o)) continue;
      std::string conf = write_conf(dir, o, v);
      RunResult r = run({peregrine_bin(), "mount", "--config", conf, member, mnt});
      EXPECT_EQ(r.code, 1) << o.key << " = " << v.text << ": " << r.describe();
      EXPECT_TRUE(r.err.starts_with("peregrine mount: " + expected_refusal(conf, o, v))) << r.describe();
    }
  }
}

// -o takes words, not TOML: a word that is no integer where one belongs,
// and no true/false where a boolean belongs, is refused the same way.
TEST(ConfigCheckCommand, CommandLineWrongTypesAreRefusedWithExitOne) {
  TempDir dir("peregrine-config-check");
  for (const Option& o : options()) {
    const char* word = o.kind == config::Kind::kBool ? "7" : o.kind == config::Kind::kInteger ? "true" : nullptr;
    if (word == nullptr) continue;  // choices and CPU lists take any word; refused by value
    const std::string assignment = std::string(o.key) + "=" + word;
    const std::string expected =
        "command line -o: " + std::string(o.key) + " = " + word + ": wrong type; allowed: " + o.allowed();
    RunResult r = run({peregrine_bin(), "config", "check", "/dev/null", "-o", assignment});
    EXPECT_EQ(r.code, 1) << assignment << ": " << r.describe();
    EXPECT_TRUE(contains(r.err, "peregrine config: " + expected)) << r.describe();
    r = run({peregrine_bin(), "mount", "--config", "/dev/null", "-o", assignment, dir / "m0", dir / "mnt"});
    EXPECT_EQ(r.code, 1) << assignment << ": " << r.describe();
    EXPECT_TRUE(contains(r.err, "peregrine mount: " + expected)) << r.describe();
  }
}

}  // namespace
}  // namespace peregrine::fstest
