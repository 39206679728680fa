// The writers and checks shared by the online member-change tests.
#include "member_change_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

namespace peregrine::fstest {

void reap_stopped_daemon(Volume& v, const std::vector<std::string>& members) {
  const int status = wait_exit(v.daemon_pid());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9) << status;
  v.adopt(0);
  run({"umount", "-l", v.mountpoint()});
  wait_members_released(members);
}

JunkLoopDevice::JunkLoopDevice(const std::string& dir, uint64_t bytes) {
  const std::string backing = dir + "/backing";
  if (!write_file(backing, pattern(1 << 20, 4)) || ::truncate(backing.c_str(), static_cast<off_t>(bytes)) != 0) {
    why_ = "cannot make " + backing;
    return;
  }
  RunResult lo = run({"losetup", "-f", "--show", backing});
  if (lo.code != 0 || lo.out.empty()) {
    why_ = "losetup could not attach a loop device: " + lo.describe();
    return;
  }
  device_ = lo.out.substr(0, lo.out.find('\n'));
}

JunkLoopDevice::~JunkLoopDevice() {
  if (!device_.empty()) run({"losetup", "-d", device_});
}

RunResult fsck(const std::vector<std::string>& members) {
  std::vector<std::string> argv = {peregrine_bin(), "fsck", "-n"};
  argv.insert(argv.end(), members.begin(), members.end());
  return run(argv);
}

void write_until(const Volume& v, const std::atomic<bool>& stop, int min_rounds, Contents& out) {
  std::mt19937_64 rng(42);
  const std::string log = v.at("log"), inplace = v.at("inplace"), direct = v.at("direct");
  std::string log_bytes, inplace_bytes = pattern(8 << 20, 1), direct_bytes = pattern(8 << 20, 2);
  ASSERT_TRUE(write_file(inplace, inplace_bytes));
  ASSERT_TRUE(write_file(direct, direct_bytes));
  Fd lf(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
  Fd bf(::open(inplace.c_str(), O_RDWR));
  Fd df(::open(direct.c_str(), O_RDWR | O_DIRECT));
  ASSERT_TRUE(lf.ok() && bf.ok() && df.ok()) << std::strerror(errno);
  void* block = nullptr;
  ASSERT_EQ(::posix_memalign(&block, 4096, 4096), 0);
  for (int round = 0; round < min_rounds || !stop.load(); ++round) {
    const std::string rec = pattern(1000 + rng() % 3000, 1000 + round);
    ASSERT_TRUE(write_at(lf.get(), rec, static_cast<off_t>(log_bytes.size())));
    log_bytes += rec;
    ASSERT_EQ(::fsync(lf.get()), 0);
    for (int k = 0; k < 8; ++k) {
      const off_t at = static_cast<off_t>(rng() % (inplace_bytes.size() / 4096) * 4096);
      const std::string b = pattern(4096, rng());
      ASSERT_TRUE(write_at(bf.get(), b, at));
      inplace_bytes.replace(static_cast<size_t>(at), 4096, b);
      const off_t dat = static_cast<off_t>(rng() % (direct_bytes.size() / 4096) * 4096);
      const std::string d = pattern(4096, rng());
      std::memcpy(block, d.data(), 4096);
      ASSERT_TRUE(write_at(df.get(), block, 4096, dat)) << std::strerror(errno);
      direct_bytes.replace(static_cast<size_t>(dat), 4096, d);
    }
    ASSERT_EQ(::fdatasync(bf.get()), 0);
    const std::string small = v.at("small-" + std::to_string(round));
    out[small] = pattern(100 + round * 37 % 9000, 5000 + round);
    ASSERT_TRUE(write_file(small, out[small]));
  }
  std::free(block);
  out[log] = log_bytes;
  out[inplace] = inplace_bytes;
  out[direct] = direct_bytes;
}

std::string first_difference(const Contents& want) {
  for (const auto& [path, bytes] : want) {
    const std::string got = read_file(path);
    if (got == bytes) continue;
    const auto at = std::mismatch(got.begin(), got.end(), bytes.begin(), bytes.end()).first - got.begin();
    return path + ": " + std::to_string(got.size()) + " bytes, want " + std::to_string(bytes.size()) +
           ", first difference at byte " + std::to_string(at);
  }
  return "";
}

}  // namespace peregrine::fstest
