// The node configuration the agent and skill kinds share: the create-time config envelope, the
// fields both kinds accept (model, max_tokens, repair_attempts, schema, writes), and paths.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <oe/cpp/expected.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm_kit/output_schema.hpp"

namespace oe::llmkit {

using Json = nlohmann::ordered_json;
using sdk::Expected;
using sdk::fail;
using sdk::Failure;

inline constexpr uint32_t kDefaultMaxTokens = 4096;
inline constexpr uint32_t kDefaultRepairAttempts = 1;

// What create receives: {"node": <spec>, "experience_dir": "<abs>"}.
struct NodeConfig {
  Json node;
  std::string experience_dir;  // never empty: the current directory when the host gave none
  // {"exe":..., "confinement":...} when a policy is in force for the node (docs/policy.md):
  // what the processes it starts run under. Null otherwise.
  Json sandbox;
};

// `label` names the kind in messages ("agent", "skill").
Expected<NodeConfig> parseNodeConfig(std::string_view config_json, std::string_view label);

// `declared` relative to the experience directory (absolute paths unchanged), normalised.
std::string resolvePath(const std::string& experience_dir, const std::string& declared);

// The node's optional string field `key`; a present non-string is an error.
Expected<std::optional<std::string>> optionalString(const Json& node, const char* key,
                                                    std::string_view who);

struct LlmNodeOptions {
  std::string id;
  std::string who;  // `Agent "<id>"` / `Skill "<id>"`: how messages name the node
  std::optional<std::string> model;
  uint32_t max_tokens = kDefaultMaxTokens;
  uint32_t repair_attempts = kDefaultRepairAttempts;
  std::vector<std::string> writes;
  std::shared_ptr<const OutputSchema> schema;  // set only for an object `schema:`
  Json schema_json;  // that schema as written (key order kept): the tool's input_schema

  // The model as activity messages name it.
  [[nodiscard]] std::string modelLabel() const {
    return model ? *model : std::string("the default model");
  }
};

// Reads and checks the shared fields. `kind_word` is "Agent" or "Skill" (upstream's wording).
Expected<LlmNodeOptions> readLlmNodeOptions(const Json& node, std::string_view kind_word);

}  // namespace oe::llmkit
