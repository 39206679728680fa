// Which config file a command reads: the command line, then
// PEREGRINE_CONFIG, then /etc/peregrine/peregrine.conf when it exists; and
// what a missing or unreadable file means for each.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "peregrine/config/config_path.h"

namespace peregrine::config {
namespace {

using From = ConfigChoice::From;

TEST(ConfigPath, CommandLineThenEnvironmentThenSystemFile) {
  ConfigChoice c = choose_config("/cli.conf", "/env.conf");
  EXPECT_EQ(c.path, "/cli.conf");
  EXPECT_EQ(c.from, From::kCommandLine);
  EXPECT_TRUE(c.required());

  c = choose_config("", "/env.conf");
  EXPECT_EQ(c.path, "/env.conf");
  EXPECT_EQ(c.from, From::kEnvironment);
  EXPECT_TRUE(c.required());

  c = choose_config("", nullptr);
  EXPECT_EQ(c.path, kDefaultConfigPath);
  EXPECT_EQ(c.from, From::kDefault);
  EXPECT_FALSE(c.required());
}

TEST(ConfigPath, EmptyVariableCountsAsUnset) {
  ConfigChoice c = choose_config("", "");
  EXPECT_EQ(c.path, kDefaultConfigPath);
  EXPECT_EQ(c.from, From::kDefault);
}

// The form without `env` reads the process's variable: the same rule.
TEST(ConfigPath, ReadsTheVariable) {
  const char* saved = std::getenv("PEREGRINE_CONFIG");
  std::string restore = saved ? saved : "";
  ::setenv("PEREGRINE_CONFIG", "/from/the/environment.conf", 1);
  ConfigChoice c = choose_config("");
  if (saved)
    ::setenv("PEREGRINE_CONFIG", restore.c_str(), 1);
  else
    ::unsetenv("PEREGRINE_CONFIG");
  EXPECT_EQ(c.path, "/from/the/environment.conf");
  EXPECT_EQ(c.from, From::kEnvironment);
}

TEST(ConfigPath, MissingSystemFileMeansDefaults) {
  auto c = load_chosen({"/nonexistent/peregrine.conf", From::kDefault});
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->source, "");
  EXPECT_TRUE(c->volumes.empty());
}

TEST(ConfigPath, MissingNamedFileIsAnError) {
  auto c = load_chosen({"/nonexistent/peregrine.conf", From::kCommandLine});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().errnum(), ENOENT);
  EXPECT_EQ(c.status().message(), "/nonexistent/peregrine.conf: No such file or directory");

  c = load_chosen({"/nonexistent/peregrine.conf", From::kEnvironment});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().errnum(), ENOENT);
  EXPECT_EQ(c.status().message(), "PEREGRINE_CONFIG=/nonexistent/peregrine.conf: No such file or directory");
}

// A directory opens and reads as nothing: it must not pass for an empty
// file, even where a missing file would mean the defaults.
TEST(ConfigPath, DirectoryIsRefused) {
  for (From from : {From::kCommandLine, From::kEnvironment, From::kDefault}) {
    auto c = load_chosen({"/", from});
    ASSERT_FALSE(c);
    EXPECT_EQ(c.status().errnum(), EISDIR);
    EXPECT_NE(c.status().message().find("/: Is a directory"), std::string::npos) << c.status().message();
  }
}

// /dev/null: nothing read, every value at its default, and no volumes.
TEST(ConfigPath, DevNullMeansOnlyTheDefaults) {
  auto c = load_chosen(choose_config("", "/dev/null"));
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->source, "/dev/null");
  EXPECT_TRUE(c->origins.empty());
  EXPECT_TRUE(c->volumes.empty());
}

// A refusal of the content names the file and line, wherever its name came from.
TEST(ConfigPath, RefusalOfTheContentNamesTheFile) {
  char path[] = "/tmp/peregrine-config-path-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "[fuse]\nworkers = true\n";
  auto c = load_chosen(choose_config("", path));
  ::unlink(path);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message().rfind(std::string(path) + ":2: fuse.workers = true: wrong type (boolean)", 0), 0u)
      << c.status().message();
}

}  // namespace
}  // namespace peregrine::config
