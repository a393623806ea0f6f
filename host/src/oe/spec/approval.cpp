// Reading a node's approval (docs/policy.md, "Approvals") and the durations of its timeout.
#include "oe/spec/approval.hpp"

#include <charconv>
#include <limits>

namespace oe::spec {

Result<int64_t> parseApprovalTimeout(std::string_view text) {
  const auto bad = [&text] {
    return makeError("timeout \"" + std::string(text) +
                     "\" is not a duration: write a positive whole number and one unit, s, m, h "
                     "or d (e.g. 30m, 2h, 7d)");
  };
  if (text.size() < 2) {
    return bad();
  }
  int64_t unit_ms = 0;
  switch (text.back()) {
    case 's':
      unit_ms = 1000;
      break;
    case 'm':
      unit_ms = 60 * 1000;
      break;
    case 'h':
      unit_ms = 3600 * 1000;
      break;
    case 'd':
      unit_ms = 86400 * 1000;
      break;
    default:
      return bad();
  }
  const std::string_view digits = text.substr(0, text.size() - 1);
  int64_t count = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (ec != std::errc() || end != digits.data() + digits.size() || count <= 0 ||
      count > std::numeric_limits<int64_t>::max() / unit_ms) {
    return bad();
  }
  return count * unit_ms;
}

std::optional<ApprovalSpec> approvalOf(const Json& node) {
  if (!node.is_object()) {
    return std::nullopt;
  }
  const Json* block = nullptr;
  ApprovalSpec spec;
  if (auto kind = node.find("kind"); kind != node.end() && kind->is_string() &&
                                     kind->get_ref<const std::string&>() == kApprovalKind) {
    spec.gate = true;
    block = &node;
  } else if (auto it = node.find("approval"); it != node.end()) {
    if (it->is_boolean() && it->get<bool>()) {
      return spec;
    }
    if (!it->is_object()) {
      return std::nullopt;  // `approval: false`, or a malformed value the schema check reports
    }
    block = &*it;
  } else {
    return std::nullopt;
  }
  if (auto prompt = block->find("prompt"); prompt != block->end() && prompt->is_string()) {
    spec.prompt = prompt->get<std::string>();
  }
  if (auto show = block->find("show"); show != block->end() && show->is_array()) {
    for (const auto& entry : *show) {
      if (entry.is_string()) {
        spec.show.push_back(entry.get<std::string>());
      }
    }
  }
  if (auto timeout = block->find("timeout"); timeout != block->end() && timeout->is_string()) {
    if (auto ms = parseApprovalTimeout(timeout->get_ref<const std::string&>())) {
      spec.timeout_ms = *ms;
    }
  }
  if (auto on = block->find("on_timeout"); on != block->end() && on->is_string()) {
    const std::string& text = on->get_ref<const std::string&>();
    spec.on_timeout = text == "approve"  ? OnTimeout::kApprove
                      : text == "reject" ? OnTimeout::kReject
                                         : OnTimeout::kFail;
  }
  return spec;
}

std::string_view toString(OnTimeout on_timeout) {
  switch (on_timeout) {
    case OnTimeout::kApprove:
      return "approve";
    case OnTimeout::kReject:
      return "reject";
    case OnTimeout::kFail:
    default:
      return "fail";
  }
}

}  // namespace oe::spec
