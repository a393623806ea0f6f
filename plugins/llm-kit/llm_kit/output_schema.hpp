// A node's `schema:` compiled once (draft-07, valijson) and the check of a structured answer
// against it, worded like upstream's AJV so messages and repair prompts read the same.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <oe/cpp/expected.hpp>
#include <string>
#include <vector>

namespace oe::llmkit {

class OutputSchema {
 public:
  // Fails with the parser's reason when `schema` is not a usable JSON Schema.
  static sdk::Expected<std::shared_ptr<const OutputSchema>> compile(const nlohmann::json& schema);

  ~OutputSchema();
  OutputSchema(const OutputSchema&) = delete;
  OutputSchema& operator=(const OutputSchema&) = delete;

  // Every problem, each as `<json pointer or (root)>: <message>`; empty when the value matches.
  // [thread-safe]: the compiled schema is only read.
  [[nodiscard]] std::vector<std::string> check(const nlohmann::json& value) const;

  // True when the schema's top level lists `key` under properties.
  [[nodiscard]] bool declaresProperty(const std::string& key) const;

 private:
  struct Impl;
  explicit OutputSchema(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oe::llmkit
