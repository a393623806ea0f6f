// The read side of the run's state as expressions see it: one lookup per `$.field` reference.
#pragma once

#include <string_view>

#include "oe/common/json.hpp"

namespace oe::expr {

class StateReader {
 public:
  virtual ~StateReader() = default;
  // The current value of a declared state field; nullptr when it is unset.
  virtual const Json* field(std::string_view name) const = 0;
};

// A StateReader over a JSON object (a snapshot, or a test's state). The object must outlive the
// reader; a non-object gives no fields.
class JsonStateReader : public StateReader {
 public:
  explicit JsonStateReader(const Json& state) : state_(state) {}

  const Json* field(std::string_view name) const override {
    if (!state_.is_object()) {
      return nullptr;
    }
    auto it = state_.find(name);
    return it == state_.end() ? nullptr : &*it;
  }

 private:
  const Json& state_;
};

}  // namespace oe::expr
