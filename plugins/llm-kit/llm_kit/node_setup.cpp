// The create-time steps agent and skill share: config, options, the file field, reading it.
#include "llm_kit/node_setup.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <oe/cpp/plugin.hpp>
#include <sstream>

namespace oe::llmkit {

void raise(Failure failure) { throw sdk::Error(failure.status, std::move(failure.message)); }

Expected<LlmNodeSetup> readLlmNode(std::string_view config_json, std::string_view label,
                                   std::string_view kind_word, const FileField& file) {
  auto config = parseNodeConfig(config_json, label);
  if (!config) {
    return std::move(config).failure();
  }
  auto options = readLlmNodeOptions(config->node, kind_word);
  if (!options) {
    return std::move(options).failure();
  }
  auto field = config->node.find(file.key);
  if (field == config->node.end() || !field->is_string() ||
      field->get_ref<const std::string&>().empty()) {
    return fail(OE_INVALID_ARGUMENT, options->who + " has no " + file.key + "; set " + file.key +
                                         ": to " + std::string(file.hint) +
                                         " (relative to the experience directory)");
  }
  std::string declared = field->get<std::string>();
  std::string path = resolvePath(config->experience_dir, declared);
  return LlmNodeSetup{std::move(*options), std::move(declared), std::move(path)};
}

Expected<std::string> readText(const std::string& path, const std::string& who,
                               std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    const std::string named = what.empty() ? std::string() : std::string(what) + " ";
    return fail(OE_PERMISSION_DENIED,
                who + ": cannot read " + named + path + ": " + std::strerror(errno));
  }
  return text.str();
}

}  // namespace oe::llmkit
