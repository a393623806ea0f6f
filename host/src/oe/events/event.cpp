// Event: a bus event whose JSON is parsed only when a listener asks for it.
#include "oe/events/event.hpp"

#include <utility>

namespace oe::events {

namespace {

std::string_view stringView(const Json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                              : std::string_view();
}

}  // namespace

Event::Event(Json event) : json_(std::move(event)) {
  if (!json_->is_object()) {
    return;
  }
  type_ = stringView(*json_, "type");
  node_id_ = stringView(*json_, "node_id");
  auto cached = json_->find("cached");
  cached_ = cached != json_->end() && cached->is_boolean() && cached->get<bool>();
  phase_ = stringView(*json_, "phase");
  if (auto item = json_->find("item"); item != json_->end() && item->is_number_integer()) {
    item_ = item->get<int64_t>();
  }
  dumped_ = json_->dump(-1, ' ', false, Json::error_handler_t::replace);
  line_ = dumped_;
}

std::string_view Event::phase() const {
  if (phase_known_) {
    return phase_;
  }
  const Json& event = json();
  return event.is_object() ? stringView(event, "phase") : std::string_view();
}

const Json& Event::json() const {
  if (!json_) {
    json_ = Json::parse(line_, nullptr, false);
  }
  return *json_;
}

}  // namespace oe::events
