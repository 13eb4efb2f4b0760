// Status and Result<T>: the value every expected failure travels in. A user error says what was
// wrong and what to do; an internal error is a bug in kforge. Neither throws.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kforge {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // the user gave something malformed: a task, a flag, a config
  kNotFound,
  kIoError,
  kTimeout,
  kUnavailable,      // a worker or service is not there (died, could not start)
  kResourceExhausted,  // a limit was reached (a client's queue share); try again later
  kInternal,         // a bug in kforge
};

const char* ToString(StatusCode code);

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }
  static Status NotFound(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
  static Status IoError(std::string message) { return {StatusCode::kIoError, std::move(message)}; }
  static Status Timeout(std::string message) { return {StatusCode::kTimeout, std::move(message)}; }
  static Status Unavailable(std::string message) { return {StatusCode::kUnavailable, std::move(message)}; }
  static Status ResourceExhausted(std::string message) {
    return {StatusCode::kResourceExhausted, std::move(message)};
  }
  static Status Internal(std::string message) { return {StatusCode::kInternal, std::move(message)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>"
  std::string ToString() const;
  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(const std::string& context) const;

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kforge

#define KFORGE_CONCAT_INNER(a, b) a##b
#define KFORGE_CONCAT(a, b) KFORGE_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::kforge::Status _st = (expr);             \
    if (!_st.ok()) return _st;                 \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// `ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(KFORGE_CONCAT(_result_, __LINE__), lhs, expr)
