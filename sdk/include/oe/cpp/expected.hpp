// Expected<T>: a value or the failure (status + message) that says why, for plugin code.
// Plugins link nothing from the host, so the SDK carries this small counterpart of oe::Result.
#pragma once

#include <oe/cpp/requires_cxx20.hpp>

#if OE_SDK_CXX20

#include <oe/types.h>

#include <string>
#include <utility>
#include <variant>

namespace oe::sdk {

struct Failure {
  oe_status status = OE_UNKNOWN;
  std::string message;
};

inline Failure fail(oe_status status, std::string message) {
  return Failure{status, std::move(message)};
}

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T result)
      : v_(std::in_place_index<0>, std::move(result)) {}  // NOLINT: implicit by design
  Expected(Failure why) : v_(std::in_place_index<1>, std::move(why)) {}  // NOLINT

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  [[nodiscard]] T& value() & { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }

  [[nodiscard]] const Failure& failure() const& { return std::get<1>(v_); }
  [[nodiscard]] Failure&& failure() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Failure> v_;
};

}  // namespace oe::sdk

#endif  // OE_SDK_CXX20
