#pragma once
// A small Expected<T>: gcc 12 has no std::expected in C++20. Errors that can
// happen (bad packet, ESRCH, unmapped memory) travel as values and end up in
// an `E.` reply; exceptions are kept for start-up failures only.
#include <string>
#include <utility>
#include <variant>

namespace btstub {

enum class ErrorCode {
  BadPacket,        // malformed request
  InvalidArgument,  // well-formed but meaningless (e.g. unknown register)
  NotSupported,     // understood but not implemented / not possible here
  NoProcess,        // no inferior, or thread gone (ESRCH)
  MemoryFault,      // unmapped / unreadable memory
  IoError,          // file or socket failure
  Internal,
};

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace btstub
