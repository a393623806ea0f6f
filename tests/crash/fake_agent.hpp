// The model behind the generated `agent` nodes: a real HTTP server speaking the OpenAI protocol
// (tests/support/fake_llm_server.hpp) whose answer is a function of the rendered prompt alone,
// so an agent node is as deterministic as a tool and its calls can be counted like executions.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "support/fake_llm_server.hpp"

namespace oe::crash {

// The identity of the call a generated agent prompt stands for (`n3`, `n3#2`, `p0s1@p0#0`),
// or "" when the text is not one of the generator's prompts.
std::string agentIdentity(const std::string& prompt);

// The structured_output call answering one generated prompt (case_gen.hpp's write modes).
test::FakeResponse agentAnswer(const test::RecordedRequest& request);

// A server answering every request with agentAnswer.
std::unique_ptr<test::FakeLlmServer> startAgentServer();

// How many times each agent identity was asked (every request the server received).
std::map<std::string, int> agentCalls(const test::FakeLlmServer& server);

}  // namespace oe::crash
