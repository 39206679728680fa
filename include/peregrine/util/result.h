// Error reporting shared by every layer: an errno plus a message for people.
//
// Functions that can fail on user input return Status (or Expected<T>); the
// message names the thing and the problem ("member /dev/sdb: superblock
// checksum mismatch"), so a tool can print it as is.
//
// Thread rules: plain values, no threads involved.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace peregrine {

class Status {
 public:
  Status() = default;  // success
  static Status ok() { return Status(); }
  static Status error(int errnum, std::string message) {
    Status s;
    s.errnum_ = errnum;
    s.message_ = std::move(message);
    return s;
  }

  bool is_ok() const { return errnum_ == 0; }
  explicit operator bool() const { return is_ok(); }
  int errnum() const { return errnum_; }  // positive errno, 0 on success
  const std::string& message() const { return message_; }

 private:
  int errnum_ = 0;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status error) : v_(std::move(error)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const { return std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace peregrine
