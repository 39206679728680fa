// libFuzzer target for superblock decoding: no input may crash or hang the
// decoder, and any input it accepts must re-encode to exactly the same
// bytes (so nothing malformed slips through as "valid but different").
// 4 KiB inputs are also tried with their checksum repaired, so the fuzzer
// reaches the field rules behind the CRC.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "peregrine/util/crc32c.h"
#include "peregrine/volume/superblock.h"

namespace {

void check(std::span<const std::byte> block) {
  auto sb = peregrine::decode_superblock(block);
  if (!sb) {
    if (sb.status().message().empty()) std::abort();  // every refusal must say why
    return;
  }
  if (!peregrine::validate_superblock(*sb)) std::abort();
  std::vector<std::byte> again(peregrine::kSuperblockSize);
  peregrine::encode_superblock(*sb, again);
  if (std::memcmp(again.data(), block.data(), block.size()) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  check(input);
  if (size == peregrine::kSuperblockSize) {
    std::vector<std::byte> sealed(input.begin(), input.end());
    uint32_t crc = peregrine::crc32c(sealed.data(), size - 4);
    for (int i = 0; i < 4; ++i) sealed[size - 4 + i] = std::byte(static_cast<uint8_t>(crc >> (8 * i)));
    check(sealed);
  }
  return 0;
}
