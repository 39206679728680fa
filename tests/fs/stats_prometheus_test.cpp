// `peregrine stats --prometheus` on a real mount: after a known amount of
// IO, the exposition parses line by line as the text format wants it
// (HELP and TYPE before a family's samples, one family block each, no
// series twice, cumulative buckets), its counters account for that IO, and
// `promtool check metrics` accepts it where promtool is installed. Then
// --output: the file is whole, replaced with --watch, and removed when the
// statistics cannot be read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

using PrometheusStatsTest = MountedTest;

constexpr uint64_t kBytes = 64 << 20;
constexpr size_t kChunk = 1 << 20;

// Writes kBytes with O_DIRECT (every byte reaches the drives), fsyncs,
// reads them back the same way and checks them.
void write_and_read_back(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644));
  ASSERT_TRUE(fd.ok()) << std::strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(::posix_memalign(&buf, 4096, kChunk), 0);
  std::string chunk = pattern(kChunk, 7);
  std::memcpy(buf, chunk.data(), kChunk);
  for (uint64_t off = 0; off < kBytes; off += kChunk) ASSERT_TRUE(write_at(fd.get(), buf, kChunk, off));
  ASSERT_EQ(::fsync(fd.get()), 0);
  for (uint64_t off = 0; off < kBytes; off += kChunk) {
    std::memset(buf, 0, kChunk);
    ASSERT_EQ(::pread(fd.get(), buf, kChunk, static_cast<off_t>(off)), static_cast<ssize_t>(kChunk));
    ASSERT_EQ(std::memcmp(buf, chunk.data(), kChunk), 0) << "at " << off;
  }
  std::free(buf);
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  std::string value;
};

// Parses an exposition, failing the test on any line the text format
// (0.0.4) does not allow or that breaks its ordering rules.
std::vector<Sample> parse_exposition(const std::string& text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*)");
  static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+))");
  static const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)\"(,|$))");
  static const std::regex number(R"([+-]?([0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?|Inf))");
  std::vector<Sample> out;
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helped, finished, series;
  std::string current;  // the family whose samples may follow
  std::istringstream lines(text);
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << "the last line ends with a line feed";
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      EXPECT_TRUE(helped.insert(m[1]).second) << "a second HELP: " << line;
      EXPECT_FALSE(finished.count(m[1])) << "a family split in two blocks: " << line;
      if (current != m[1]) {
        if (!current.empty()) finished.insert(current);
        current = m[1];
      }
      continue;
    }
    if (std::regex_match(line, m, type)) {
      EXPECT_TRUE(types.emplace(m[1], m[2]).second) << "a second TYPE: " << line;
      EXPECT_EQ(current, m[1]) << "TYPE not after its HELP: " << line;
      continue;
    }
    if (!std::regex_match(line, m, sample)) {
      ADD_FAILURE() << "not a sample line: [" << line << "]";
      continue;
    }
    Sample s{m[1], {}, m[3]};
    EXPECT_TRUE(std::regex_match(s.value, number)) << line;
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0 &&
          types.count(family.substr(0, family.size() - std::strlen(suffix))) &&
          types[family.substr(0, family.size() - std::strlen(suffix))] == "histogram")
        family = family.substr(0, family.size() - std::strlen(suffix));
    EXPECT_EQ(family, current) << "a sample outside its family's block (HELP and TYPE first): " << line;
    EXPECT_TRUE(types.count(family) && helped.count(family)) << "no HELP and TYPE before: " << line;
    std::string rest = m[2];
    for (std::smatch l; !rest.empty() && std::regex_search(rest, l, label, std::regex_constants::match_continuous);
         rest = l.suffix()) {
      std::string v, raw = l[2];
      for (size_t i = 0; i < raw.size(); ++i)
        if (raw[i] == '\\') {
          char c = raw[++i];
          v += c == 'n' ? '\n' : c;
        } else {
          v += raw[i];
        }
      EXPECT_TRUE(s.labels.emplace(l[1], v).second) << "a label twice: " << line;
    }
    EXPECT_TRUE(rest.empty()) << "malformed labels [" << rest << "] in " << line;
    EXPECT_TRUE(series.insert(s.name + "{" + m[2].str() + "}").second) << "a series twice: " << line;
    out.push_back(std::move(s));
  }
  return out;
}

uint64_t as_count(const Sample& s) { return std::stoull(s.value); }

std::string mount_source(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mounts");
  std::string source, dir, rest, found;
  while (in >> source >> dir && std::getline(in, rest))
    if (dir == mountpoint) found = source;  // the last (top) mount there
  return found;
}

TEST_F(PrometheusStatsTest, CountersAccountForTheIoAndTheFormatIsWellFormed) {
  write_and_read_back(at("data"));
  RunResult r = run({peregrine_bin(), "stats", "--prometheus", volume_->mountpoint()});
  ASSERT_EQ(r.code, 0) << r.describe();
  std::vector<Sample> samples = parse_exposition(r.out);
  ASSERT_FALSE(HasFailure()) << r.out;

  // The volume: named as the mount source names it, on this mount point.
  std::string source = mount_source(volume_->mountpoint());
  ASSERT_EQ(source.rfind("peregrine:", 0), 0u) << source;
  const std::string volume = source.substr(10);
  std::map<std::string, uint64_t> written, read;  // member -> bytes
  std::set<std::string> drives;
  uint64_t infos = 0, write_ios = 0, inodes = 0, metadata_used = 0, device_count = 0;
  std::map<std::string, std::vector<uint64_t>> device_buckets;  // member -> cumulative counts in order
  std::string transport;
  std::set<std::string> names;
  for (const Sample& s : samples) {
    names.insert(s.name);
    if (s.name == "peregrine_volume_info") transport = s.labels.at("transport");
    EXPECT_EQ(s.labels.at("volume"), volume) << s.name;
    EXPECT_EQ(s.labels.at("mountpoint"), volume_->mountpoint()) << s.name;
    if (s.name == "peregrine_volume_info") {
      ++infos;
      EXPECT_EQ(s.value, "1");
      if (!test_transport().empty()) {
        EXPECT_EQ(s.labels.at("transport"), test_transport());
      } else {
        EXPECT_FALSE(s.labels.at("transport").empty());
      }
    }
    if (s.name.rfind("peregrine_drive_", 0) == 0) {
      drives.insert(s.labels.at("drive"));
      EXPECT_TRUE(s.labels.count("member")) << s.name;
    }
    if (s.name == "peregrine_drive_bytes_total" && s.labels.at("op") == "write")
      written[s.labels.at("member")] += as_count(s);
    if (s.name == "peregrine_drive_bytes_total" && s.labels.at("op") == "read")
      read[s.labels.at("member")] += as_count(s);
    if (s.name == "peregrine_drive_ios_total" && s.labels.at("op") == "write") write_ios += as_count(s);
    if (s.name == "peregrine_drive_errors_total") {
      EXPECT_EQ(s.value, "0") << s.labels.at("member");
    }
    if (s.name == "peregrine_metadata_inodes") inodes = as_count(s);
    if (s.name == "peregrine_metadata_used_bytes") metadata_used = as_count(s);
    if (s.name == "peregrine_drive_device_latency_seconds_bucket")
      device_buckets[s.labels.at("member")].push_back(as_count(s));
    if (s.name == "peregrine_drive_device_latency_seconds_count") device_count += as_count(s);
  }
  EXPECT_EQ(infos, 1u);
  // The classic reader's following of lone programs is counted there only.
  EXPECT_EQ(names.count("peregrine_fuse_lone_follow_runs_total"), transport == "classic" ? 1u : 0u) << transport;
  EXPECT_EQ(names.count("peregrine_fuse_lone_follow_stalls_total"), transport == "classic" ? 1u : 0u) << transport;
  EXPECT_EQ(drives, (std::set<std::string>{"0", "1", "2", "3"}));
  std::set<std::string> members(volume_->members().begin(), volume_->members().end());
  uint64_t total_written = 0, total_read = 0;
  for (const std::string& m : members) {
    ASSERT_TRUE(written.count(m)) << m << "\n" << r.out;
    // A striped 64 MiB file puts a quarter on each drive; half of that
    // leaves room for where the allocator put it.
    EXPECT_GE(written[m], kBytes / 4 / 2) << m;
    EXPECT_GE(read[m], kBytes / 4 / 2) << m;
    total_written += written[m];
    total_read += read[m];
  }
  EXPECT_EQ(written.size(), members.size());
  EXPECT_GE(total_written, kBytes);
  EXPECT_GE(total_read, kBytes);
  EXPECT_GE(write_ios, kBytes / (4 << 20)) << "at most 4 MiB per IO";
  EXPECT_EQ(inodes, 2u) << "the root and the file";
  EXPECT_GT(metadata_used, 0u);
  EXPECT_GE(device_count, write_ios);
  for (const auto& [member, counts] : device_buckets) {
    ASSERT_EQ(counts.size(), 26u) << member;
    for (size_t i = 1; i < counts.size(); ++i) EXPECT_LE(counts[i - 1], counts[i]) << member << " bucket " << i;
    EXPECT_GT(counts.back(), 0u) << member;
  }

  // promtool, where installed (Debian's prometheus package), has the last
  // word on the format.
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    std::string file = volume_->dir() + "/check.prom";
    std::ofstream(file) << r.out;
    RunResult check = run({"/bin/sh", "-c", "promtool check metrics < \"$1\"", "sh", file});
    EXPECT_EQ(check.code, 0) << check.describe();
  } else {
    std::printf("promtool not installed: the format was checked by this test's parser only\n");
  }
}

TEST_F(PrometheusStatsTest, OutputFileIsWholeAndRewrittenByWatch) {
  write_and_read_back(at("data"));
  TempDir textfiles("peregrine-textfile");
  const std::string file = textfiles / "peregrine.prom";
  { std::ofstream(file) << "stale\n"; }
  RunResult w = run({peregrine_bin(), "stats", "--prometheus", "--watch", "0.05", "--count", "3", "--output", file,
                     volume_->mountpoint()});
  ASSERT_EQ(w.code, 0) << w.describe();
  EXPECT_TRUE(w.out.empty()) << w.out;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Sample> samples = parse_exposition(text.str());
  ASSERT_FALSE(HasFailure()) << text.str();
  uint64_t written = 0;
  for (const Sample& s : samples)
    if (s.name == "peregrine_drive_bytes_total" && s.labels.at("op") == "write") written += as_count(s);
  EXPECT_GE(written, kBytes) << "totals since mount, not the last interval's";
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(textfiles.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"peregrine.prom"}) << "no temporary file left for the collector";

  // Not a peregrine mount (the volume is gone): the file goes, rather than
  // serving old numbers as current.
  RunResult gone = run({peregrine_bin(), "stats", "--prometheus", "--output", file, volume_->dir()});
  EXPECT_EQ(gone.code, 1) << gone.describe();
  EXPECT_NE(gone.err.find("not a peregrine mount"), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find("removed " + file), std::string::npos) << gone.err;
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(PrometheusStatsTest, ConflictingOptionsAreRefused) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::string mnt = volume_->mountpoint();
  for (const Case& c : {Case{{"--prometheus", "--json", mnt}, "two formats"},
                        Case{{"--output", volume_->dir() + "/x.prom", mnt}, "add --prometheus"},
                        Case{{"--prometheus", "--watch", "1", mnt}, "give --output FILE"}}) {
    std::vector<std::string> argv{peregrine_bin(), "stats"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    RunResult r = run(argv);
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(volume_->dir() + "/x.prom"));
}

}  // namespace
}  // namespace peregrine::fstest
