// The generated agents' model (fake_agent.hpp). A prompt (case_gen.cpp, agentPrompt) reads:
//   oe-crash agent / id: n3 / index: 2 / item: n0.2 / pipeline: {{$pipeline}} / iter: ... /
//   read <field>: <value> ... / w <field> <mode> ...
// where a placeholder with no value stays as written.
#include "crash/fake_agent.hpp"

#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

namespace oe::crash {
namespace {

using Json = nlohmann::json;

struct Prompt {
  std::string text;
  std::string id;
  std::string index;
  std::string pipeline;
  std::string iter;
  std::vector<std::pair<std::string, std::string>> writes;
};

bool rendered(const std::string& value) { return value.rfind("{{", 0) != 0; }

std::optional<Prompt> parsePrompt(const std::string& text) {
  if (text.rfind("oe-crash agent\n", 0) != 0) {
    return std::nullopt;
  }
  Prompt p;
  p.text = text;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&](const char* key) -> std::optional<std::string> {
      const std::string prefix = std::string(key) + ": ";
      if (line.rfind(prefix, 0) == 0) {
        return line.substr(prefix.size());
      }
      return std::nullopt;
    };
    if (auto id = value("id")) {
      p.id = *id;
    } else if (auto index = value("index")) {
      p.index = rendered(*index) ? *index : "";
    } else if (auto pipeline = value("pipeline")) {
      p.pipeline = rendered(*pipeline) ? *pipeline : "";
    } else if (auto iter = value("iter")) {
      p.iter = rendered(*iter) ? *iter : "";
    } else if (line.rfind("w ", 0) == 0) {
      const size_t space = line.find(' ', 2);
      if (space != std::string::npos) {
        p.writes.emplace_back(line.substr(2, space - 2), line.substr(space + 1));
      }
    }
  }
  if (p.id.empty()) {
    return std::nullopt;
  }
  return p;
}

std::string identity(const Prompt& p) {
  std::string ident = p.id;
  if (!p.index.empty()) {
    ident += "#" + p.index;
  }
  if (!p.pipeline.empty()) {
    ident += "@" + p.pipeline;
  }
  if (!p.iter.empty()) {
    ident += "~" + p.iter;
  }
  return ident;
}

std::string promptOf(const test::RecordedRequest& request) {
  const Json body = request.json();
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array() ||
      body["messages"].empty()) {
    return {};
  }
  const Json& content = body["messages"][0].value("content", Json());
  return content.is_string() ? content.get<std::string>() : std::string();
}

}  // namespace

std::string agentIdentity(const std::string& prompt) {
  auto p = parsePrompt(prompt);
  return p ? identity(*p) : std::string();
}

test::FakeResponse agentAnswer(const test::RecordedRequest& request) {
  auto p = parsePrompt(promptOf(request));
  if (!p) {
    return test::FakeLlmServer::json(
        400, {{"error", {{"type", "invalid_request_error"},
                         {"message", "not a prompt of the oe crash harness"}}}});
  }
  uint32_t hash = 0x811c9dc5U;
  for (unsigned char c : p->text) {
    hash = (hash ^ c) * 0x01000193U;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", hash);
  const std::string ident = identity(*p);
  Json delta = Json::object();
  for (const auto& [field, mode] : p->writes) {
    if (mode == "item") {
      delta[field] = Json::array({ident + ":" + hex});
    } else if (mode == "value") {
      delta[field] = ident + ":" + hex;
    } else if (mode == "number") {
      delta[field] = hash % 100;
    } else if (mode == "const") {
      delta[field] = "once:" + field;
    }
  }
  return test::FakeLlmServer::openAiToolCalls({{"structured_output", delta.dump()}});
}

std::unique_ptr<test::FakeLlmServer> startAgentServer() {
  auto server = std::make_unique<test::FakeLlmServer>();
  server->setHandler(agentAnswer);
  return server;
}

std::map<std::string, int> agentCalls(const test::FakeLlmServer& server) {
  std::map<std::string, int> calls;
  for (const auto& request : server.requests()) {
    const std::string ident = agentIdentity(promptOf(request));
    if (!ident.empty()) {
      ++calls[ident];
    }
  }
  return calls;
}

}  // namespace oe::crash
