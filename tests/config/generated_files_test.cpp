// The committed conf/peregrine.conf and the option references in
// docs/configuration.md and packaging/man/peregrine.conf.5 must equal what
// the option table generates, so the shipped defaults and the documentation
// cannot drift from the code.
// To regenerate after changing src/config/options.cpp:
//   PEREGRINE_UPDATE_GENERATED=1 ctest -R GeneratedFiles
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "peregrine/config/load.h"
#include "peregrine/config/mount_flags.h"
#include "peregrine/config/render.h"
#include "test_util.h"

namespace peregrine::config {
namespace {

const std::string kConf = std::string(PEREGRINE_SOURCE_DIR "/conf/peregrine.conf");
const std::string kDoc = std::string(PEREGRINE_SOURCE_DIR "/docs/configuration.md");
const std::string kMan = std::string(PEREGRINE_SOURCE_DIR "/packaging/man/peregrine.conf.5");

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool updating() { return std::getenv("PEREGRINE_UPDATE_GENERATED") != nullptr; }

const char* kHowToFix = "regenerate: PEREGRINE_UPDATE_GENERATED=1 ctest -R GeneratedFiles";

TEST(GeneratedFiles, ShippedConfEqualsTheOptionTable) {
  std::string expected = render_default_conf();
  if (updating()) write(kConf, expected);
  EXPECT_EQ(read(kConf), expected) << kConf << " differs from the option table; " << kHowToFix;
}

// Checks (or, when updating, rewrites) the lines of `path` from the line
// holding `begin` through the line holding `end`.
void expect_generated_region(const std::string& path, std::string_view begin_marker, std::string_view end_marker,
                             const std::string& expected) {
  std::string text = read(path);
  size_t begin = text.find(begin_marker);
  size_t end = text.find(end_marker);
  ASSERT_NE(begin, std::string::npos) << path << " lacks the line " << begin_marker;
  ASSERT_NE(end, std::string::npos) << path << " lacks the line " << end_marker;
  end = text.find('\n', end) + 1;
  if (updating()) {
    text.replace(begin, end - begin, expected);
    write(path, text);
    end = begin + expected.size();
  }
  EXPECT_EQ(text.substr(begin, end - begin), expected) << path << ": generated part differs; " << kHowToFix;
}

TEST(GeneratedFiles, DocReferenceEqualsTheOptionTable) {
  expect_generated_region(kDoc, kDocBeginMarker, kDocEndMarker, render_markdown_reference());
}

TEST(GeneratedFiles, ManPageReferenceEqualsTheOptionTable) {
  expect_generated_region(kMan, kManBeginMarker, kManEndMarker, render_man_reference());
}

TEST(GeneratedFiles, ShippedConfLoadsToTheDefaults) {
  auto c = load_file(kConf);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(testing::values(c->settings), testing::values(Settings::defaults()));
  EXPECT_TRUE(c->origins.empty()) << "the shipped file should set nothing (all commented out)";
  EXPECT_TRUE(c->volumes.empty());
}

TEST(GeneratedFiles, ExampleVolumeInTheConfIsValid) {
  // Uncommenting the example volume must give a loadable file.
  std::string text = read(kConf);
  size_t at = text.find("#[volume.data]");
  ASSERT_NE(at, std::string::npos);
  std::string tail = text.substr(at);
  std::string uncommented;
  std::istringstream lines(tail);
  for (std::string line; std::getline(lines, line);) uncommented += line.substr(1) + "\n";
  auto c = parse_text(text.substr(0, at) + uncommented, "uncommented.conf");
  ASSERT_TRUE(c) << c.status().message();
  ASSERT_EQ(c->volumes.size(), 1u);
  EXPECT_EQ(c->volumes[0].name, "data");
}

// The generic mount options are written up by hand in mount.peregrine(8)
// and docs/usage.md: every one of the table must be there.
TEST(GeneratedFiles, EveryMountOptionIsDocumented) {
  const std::string man = read(std::string(PEREGRINE_SOURCE_DIR "/packaging/man/mount.peregrine.8"));
  const std::string usage = read(std::string(PEREGRINE_SOURCE_DIR "/docs/usage.md"));
  for (const MountFlag& f : mount_flags()) {
    std::string name(f.name);
    if (name.ends_with("-")) name += "*";  // x-*
    std::string roff;                      // groff escapes a hyphen
    for (char c : name) roff += c == '-' ? std::string("\\-") : std::string(1, c);
    EXPECT_NE(man.find(roff), std::string::npos) << "mount.peregrine.8 does not document " << name;
    EXPECT_NE(usage.find("`" + name), std::string::npos) << "docs/usage.md does not document " << name;
  }
}

}  // namespace
}  // namespace peregrine::config
