#include "peregrine/volume/uuid.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace peregrine {

Expected<Uuid> Uuid::random() {
  Uuid u;
  size_t got = 0;
  while (got < u.bytes.size()) {
    ssize_t n = ::getrandom(u.bytes.data() + got, u.bytes.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      return Status::error(e, std::string("cannot generate a UUID: ") + std::strerror(e));
    }
    got += static_cast<size_t>(n);
  }
  u.bytes[6] = static_cast<uint8_t>((u.bytes[6] & 0x0f) | 0x40);  // version 4
  u.bytes[8] = static_cast<uint8_t>((u.bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return u;
}

bool Uuid::is_nil() const {
  for (uint8_t b : bytes)
    if (b != 0) return false;
  return true;
}

std::string Uuid::to_string() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[bytes[i] >> 4]);
    s.push_back(kHex[bytes[i] & 0xf]);
  }
  return s;
}

}  // namespace peregrine
