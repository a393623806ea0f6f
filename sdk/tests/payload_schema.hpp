// One of the SDK's payload schemas (sdk/schema/<name>), compiled with valijson, and what it says
// about a value. Shared by sdk/tests and tests/abi.
#pragma once

#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#pragma GCC diagnostic ignored "-Wshadow"
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#pragma GCC diagnostic pop

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace oe::sdk_test {

class PayloadSchema {
 public:
  using json = nlohmann::json;

  // `dir`: sdk/schema of the source tree, or an installed copy.
  PayloadSchema(const std::filesystem::path& dir, const std::string& name) {
    std::ifstream in(dir / name);
    std::stringstream text;
    text << in.rdbuf();
    document_ = json::parse(text.str(), nullptr, false);
    if (document_.is_discarded()) {
      error_ = name + " is not JSON";
      return;
    }
    try {
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      valijson::adapters::NlohmannJsonAdapter adapter(document_);
      parser.populateSchema(adapter, schema_);
    } catch (const std::exception& e) {
      error_ = name + ": " + e.what();
    }
  }

  [[nodiscard]] const std::string& error() const { return error_; }

  // Empty when `value` is valid; else the first problem with its place.
  [[nodiscard]] std::string check(const json& value) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(value);
    if (validator.validate(schema_, adapter, &results)) {
      return {};
    }
    valijson::ValidationResults::Error first;
    std::string out;
    while (results.popError(first)) {
      std::string where;
      for (const std::string& part : first.context) {
        where += part;
      }
      out += where + ": " + first.description + "\n";
    }
    return out;
  }

 private:
  json document_;
  valijson::Schema schema_;
  std::string error_;
};

}  // namespace oe::sdk_test
