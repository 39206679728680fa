// fio --verify=crc32c through the mount: O_DIRECT with queue depth (written
// and verified in one run), and buffered IO with unaligned block sizes
// (written, then verified by a second fio after a remount, so the check
// reads from the members and not from the page cache).
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "fs_test_util.h"

namespace peregrine::fstest {
namespace {

class FioVerifyTest : public CacheModes<MountedTest> {};

constexpr uint64_t kSize = 48 << 20;

std::vector<std::string> fio_args(const std::string& file, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"fio",
                                "--name=verify",
                                "--filename=" + file,
                                "--size=" + std::to_string(kSize),
                                "--rw=randwrite",
                                "--verify=crc32c",
                                "--verify_fatal=1",
                                "--output-format=json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The job's error code and bytes read and written, from fio's JSON.
struct FioJob {
  int error = -1;
  uint64_t read = 0, written = 0;
};
FioJob job_of(const RunResult& r) {
  FioJob j;
  try {
    // fio may print notes before the JSON document.
    auto doc = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    const auto& job = doc.at("jobs").at(0);
    j.error = job.at("error").get<int>();
    j.read = job.at("read").at("io_bytes").get<uint64_t>();
    j.written = job.at("write").at("io_bytes").get<uint64_t>();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "fio output: " << e.what() << "\n" << r.describe();
  }
  return j;
}

TEST_P(FioVerifyTest, DirectIoWithQueueDepth) {
  RunResult r = run(fio_args(
      at("direct.dat"), {"--direct=1", "--ioengine=libaio", "--iodepth=32", "--bsrange=4k-256k", "--do_verify=1"}));
  ASSERT_EQ(r.code, 0) << r.describe();
  FioJob j = job_of(r);
  EXPECT_EQ(j.error, 0);
  EXPECT_EQ(j.written, kSize);
  EXPECT_EQ(j.read, kSize) << "fio must have read everything back to verify it";
}

TEST_P(FioVerifyTest, BufferedIoVerifiedAfterRemount) {
  RunResult w = run(fio_args(
      at("buffered.dat"), {"--direct=0", "--ioengine=psync", "--bsrange=1k-128k", "--do_verify=0", "--end_fsync=1"}));
  ASSERT_EQ(w.code, 0) << w.describe();
  EXPECT_EQ(job_of(w).written, kSize);
  int status = volume_->unmount();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  RunResult m = volume_->mount();
  ASSERT_EQ(m.code, 0) << m.describe();
  RunResult v =
      run(fio_args(at("buffered.dat"), {"--direct=0", "--ioengine=psync", "--bsrange=1k-128k", "--verify_only"}));
  ASSERT_EQ(v.code, 0) << v.describe();
  FioJob j = job_of(v);
  EXPECT_EQ(j.error, 0);
  EXPECT_EQ(j.read, kSize) << "the verify pass must have read everything";
}

PEREGRINE_FOR_CACHE_MODES(FioVerifyTest);

}  // namespace
}  // namespace peregrine::fstest
