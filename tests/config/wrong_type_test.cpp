// Every option given every TOML type it does not take, in the file, in a
// volume's options and on the command line: each is refused with the key,
// the value, "wrong type" and what is allowed, never by a crash. A boolean
// where an integer belongs aborted the whole program with
// std::bad_variant_access (issue 24) while strings and floats were refused
// properly; the table below covers every pairing so no type is left out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "peregrine/config/overrides.h"
#include "test_util.h"
#include "toml_samples.h"

namespace peregrine::config {
namespace {

using testing::own_type;
using testing::toml_samples;

void expect_parts(const std::string& message, const std::vector<std::string>& parts, const std::string& context) {
  for (const std::string& p : parts)
    EXPECT_NE(message.find(p), std::string::npos) << context << ": missing '" << p << "' in: " << message;
}

TEST(ConfigWrongType, EveryOptionRefusesEveryOtherTomlTypeInTheFile) {
  int tried = 0;
  for (const Option& o : options()) {
    for (const testing::TomlSample& v : toml_samples()) {
      if (v.type == own_type(o)) continue;
      // Line 3, after a comment line, so the line number is really checked.
      const std::string text =
          "[" + std::string(o.table()) + "]\n# comment\n" + std::string(o.name()) + " = " + v.text + "\n";
      auto c = parse_text(text, testing::kFile);
      ++tried;
      ASSERT_FALSE(c) << "accepted:\n" << text;
      expect_parts(c.status().message(),
                   {"test.conf:3: " + std::string(o.key) + " = " + v.shown + ": wrong type (" + v.type + ")",
                    "; allowed: " + o.allowed()},
                   text);
    }
  }
  EXPECT_GT(tried, 200);  // every option met most of the samples
}

// The same keys written as dotted keys at the top level go through the same
// conversion: one place, not one per spelling.
TEST(ConfigWrongType, DottedKeysAtTheTopLevelAreRefusedAlike) {
  for (const Option& o : options()) {
    const std::string text = std::string(o.key) + " = " + (o.kind == Kind::kBool ? "7" : "true") + "\n";
    auto c = parse_text(text, testing::kFile);
    ASSERT_FALSE(c) << "accepted:\n" << text;
    expect_parts(c.status().message(), {"test.conf:1: " + std::string(o.key) + " = ", ": wrong type ("}, text);
  }
}

// Command-line words that are not of an option's type. Choices and CPU
// lists take any word as a string, so only booleans and integers can get a
// wrong type here; the others are refused by value (tested below).
std::vector<std::string> wrong_words(const Option& o) {
  switch (o.kind) {
    case Kind::kBool: return {"1", "0", "yes", "on", "1.5", "\"true\"x", ""};
    case Kind::kInteger: {
      std::vector<std::string> w = {"true", "false", "1.5", "four", "[1]", "0x10", "1e3", "+1", ""};
      if (!o.allows_auto) w.push_back("auto");
      return w;
    }
    case Kind::kChoice:
    case Kind::kCpuList: return {};
  }
  return {};
}

TEST(ConfigWrongType, CommandLineRefusesEveryWrongWord) {
  for (const Option& o : options()) {
    for (const std::string& word : wrong_words(o)) {
      Config c;
      const std::string assignment = std::string(o.key) + "=" + word;
      Status s = apply_overrides(c, {assignment});
      ASSERT_FALSE(s) << "accepted -o " << assignment;
      expect_parts(s.message(),
                   {"command line -o: " + std::string(o.key) + " = ", ": wrong type; allowed: " + o.allowed()},
                   "-o " + assignment);
    }
  }
}

TEST(ConfigWrongType, CommandLineChoicesAndCpuListsRefuseOtherTypesByValue) {
  for (const Option& o : options()) {
    if (o.kind != Kind::kChoice && o.kind != Kind::kCpuList) continue;
    for (const char* word : {"true", "1.5", "[1]"}) {  // "7" is a CPU list
      Config c;
      const std::string assignment = std::string(o.key) + "=" + word;
      Status s = apply_overrides(c, {assignment});
      ASSERT_FALSE(s) << "accepted -o " << assignment;
      expect_parts(s.message(),
                   {"command line -o: " + std::string(o.key) + " = " + word + ": ", "; allowed: " + o.allowed()},
                   "-o " + assignment);
    }
  }
}

// A volume's options string is checked when the file is loaded, with the
// volume's line in the message.
TEST(ConfigWrongType, VolumeOptionsRefuseWrongTypes) {
  for (const Option& o : options()) {
    for (const std::string& word : wrong_words(o)) {
      if (word.find_first_of("\",[") != std::string::npos || word.empty())
        continue;  // not -o syntax inside a TOML string
      const std::string text =
          "[volume.v]\nmembers = [\"/dev/null\"]\noptions = \"" + std::string(o.key) + "=" + word + "\"\n";
      auto c = parse_text(text, testing::kFile);
      ASSERT_FALSE(c) << "accepted:\n" << text;
      expect_parts(c.status().message(),
                   {"test.conf:3 (volume.v.options): " + std::string(o.key) + " = " + word + ": wrong type"}, text);
    }
  }
}

// Line ends as Windows editors write them are TOML newlines: the file means
// the same and refusals give the same lines.
TEST(ConfigOddFiles, CrlfLineEndsReadAsLf) {
  const std::string lf =
      "# peregrine\n[engine]\nhigh_watermark_per_drive = 64\n\n[fuse]\nworkers = 3\ncache = \"writeback\"\n";
  std::string crlf;
  for (char ch : lf) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  Config a = testing::parse_ok(lf);
  Config b = testing::parse_ok(crlf);
  EXPECT_EQ(testing::values(a.settings), testing::values(b.settings));
  EXPECT_EQ(b.settings.engine.high_watermark_per_drive, 64u);
  EXPECT_EQ(b.origin_of("fuse.workers").to_string(), "test.conf:6");

  std::string m = testing::refusal_of("[fuse]\r\n\r\nworkers = true\r\n");
  EXPECT_NE(m.find("test.conf:3: fuse.workers = true: wrong type (boolean)"), std::string::npos) << m;
}

// Bytes no editor should write are syntax errors with a position, not crashes.
TEST(ConfigOddFiles, BrokenBytesAreSyntaxErrors) {
  static const char with_nul[] =
      "[engine]\nhigh_watermark_per_drive = 6\0"
      "4\n";
  const std::vector<std::string> odd = {
      std::string("[engine]\rhigh_watermark_per_drive = 64\r"),                 // lone CR
      std::string(with_nul, sizeof with_nul - 1),                               // NUL byte
      std::string("[log]\nlevel = \"\xff\xfe\"\n"),                             // not UTF-8
      "[engine]\nx = " + std::string(400, '[') + std::string(400, ']') + "\n",  // nested too deep
      std::string("[engine"),                                                   // cut short
  };
  for (const std::string& text : odd) {
    auto c = parse_text(text, testing::kFile);
    ASSERT_FALSE(c) << "accepted: " << text;
    EXPECT_NE(c.status().message().find("TOML syntax error"), std::string::npos) << c.status().message();
    EXPECT_EQ(c.status().message().rfind("test.conf:", 0), 0u) << c.status().message();
  }
}

// A byte-order mark is allowed by TOML and written by some editors.
TEST(ConfigOddFiles, ByteOrderMarkIsAccepted) {
  Config c = testing::parse_ok("\xef\xbb\xbf[engine]\nhigh_watermark_per_drive = 64\n");
  EXPECT_EQ(c.settings.engine.high_watermark_per_drive, 64u);
}

}  // namespace
}  // namespace peregrine::config
