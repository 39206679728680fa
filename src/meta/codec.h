// Little-endian byte writer/reader used by journal and checkpoint encoding
// (the byte order itself: util/little_endian.h). The reader checks every
// bound and latches failure.
// Thread rules: single-thread values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "peregrine/util/little_endian.h"

namespace peregrine::meta::codec {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void bytes(std::string_view s) { out_->append(s); }
  size_t size() const { return out_->size(); }
  std::string* out() { return out_; }

 private:
  void le(uint64_t v, int n) {
    std::byte b[8];
    put_le(b, 0, v, n);
    out_->append(reinterpret_cast<const char*>(b), static_cast<size_t>(n));
  }
  std::string* out_;
};

class Reader {
 public:
  Reader(std::span<const std::byte> b, size_t pos = 0) : b_(b), pos_(pos) {}
  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  uint16_t u16() { return static_cast<uint16_t>(le(2)); }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  int64_t i64() { return static_cast<int64_t>(le(8)); }
  std::string str(size_t n) {
    if (!need(n)) return {};
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  void fail() { ok_ = false; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? b_.size() - pos_ : 0; }

 private:
  bool need(size_t n) {
    if (!ok_ || b_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  uint64_t le(int n) {
    if (!need(n)) return 0;
    uint64_t v = get_le(b_, pos_, n);
    pos_ += n;
    return v;
  }
  std::span<const std::byte> b_;
  size_t pos_;
  bool ok_ = true;
};

// At a raw position (a field patched in place, e.g. a checksum).
inline void put_le32(std::byte* p, uint32_t v) { peregrine::put_le32(std::span<std::byte>(p, 4), 0, v); }
inline void put_le64(std::byte* p, uint64_t v) { peregrine::put_le64(std::span<std::byte>(p, 8), 0, v); }
inline uint32_t get_le32(const std::byte* p) { return peregrine::get_le32(std::span<const std::byte>(p, 4), 0); }
inline uint64_t get_le64(const std::byte* p) { return peregrine::get_le64(std::span<const std::byte>(p, 8), 0); }

}  // namespace peregrine::meta::codec
