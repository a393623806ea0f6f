// What create and invoke of every LLM-backed node kind (agent, skill) share: the checked node
// spec with its file field resolved, reading that file, and failures turned into sdk::Error.
#pragma once

#include <oe/cpp/expected.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "llm_kit/options.hpp"

namespace oe::llmkit {

// Throws the sdk::Error the glue reports to the host: create and invoke report failures so.
[[noreturn]] void raise(Failure failure);

// The value of `result`, or raise() with its failure.
template <class T>
T orRaise(Expected<T> result) {
  if (!result) {
    raise(std::move(result).failure());
  }
  return std::move(result).value();
}

// The node's file field (agent: prompt, skill: impl) and how the "has no ..." message asks for
// it, e.g. {"prompt", "the path of a prompt template file"}.
struct FileField {
  const char* key;
  std::string_view hint;
};

struct LlmNodeSetup {
  LlmNodeOptions options;
  std::string declared;  // the file field as written
  std::string path;      // that field resolved against the experience directory
};

// Parses create's config (`label`: "agent"), the shared options (`kind_word`: "Agent") and the
// required non-empty string `file`.
Expected<LlmNodeSetup> readLlmNode(std::string_view config_json, std::string_view label,
                                   std::string_view kind_word, const FileField& file);

// The whole file at `path`; `what` ("the prompt template") names it in the message when it
// cannot be read.
Expected<std::string> readText(const std::string& path, const std::string& who,
                               std::string_view what = {});

}  // namespace oe::llmkit
