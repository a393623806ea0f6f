// See host_call.hpp.
#include "oe/llm/host_call.hpp"

namespace oe::llm {

void HostCall::log(oe_log_level level, std::string_view message) {
  sink_.write(level, node_id_, message);
}

oe_status HostCall::emitEvent(std::string_view type, std::string_view fields_json) {
  if (type == "node.activity") {
    // Plugins say "message"; the LLM service's own waits say "activity".
    const Json fields = Json::parse(fields_json, nullptr, false);
    for (const char* key : {"message", "activity"}) {
      if (fields.is_object() && fields.contains(key) && fields[key].is_string()) {
        sink_.write(OE_LOG_INFO, node_id_, fields[key].get<std::string>());
        break;
      }
    }
    return OE_OK;
  }
  return type == "node.tokens" ? OE_OK : OE_FAILED_PRECONDITION;
}

oe_status HostCall::llmComplete(std::string_view request_json, std::string& out) {
  Answer answer = llm_.complete(Site{this, node_id_, &usage_}, request_json);
  out = std::move(answer.body);
  return answer.status;
}

}  // namespace oe::llm
