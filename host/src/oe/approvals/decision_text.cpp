// The lines people read about approvals.
#include "oe/approvals/decision_text.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace oe::approvals {

std::string deciderName(std::string_view as) {
  if (!as.empty()) {
    return std::string(as);
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read only, once per command
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    return user;
  }
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    return found->pw_name;
  }
  return "unknown";
}

std::string describeRequest(const Request& request) {
  std::string out =
      "node \"" + request.node_id + "\": " + request.prompt + " (asked " + request.requested_at;
  if (request.deadline_ms >= 0) {
    out += ", deadline " + isoOfMs(request.deadline_ms) + " then " + request.on_timeout;
  } else {
    out += ", no deadline";
  }
  return out + ")";
}

std::string describeDecision(const Decision& decision) {
  if (decision.timed_out) {
    return decision.decision + " at its deadline " + decision.at + " (" + decision.comment + ")";
  }
  return decision.decision + " by " + decision.by + " at " + decision.at +
         (decision.comment.empty() ? std::string() : ": " + decision.comment);
}

}  // namespace oe::approvals
