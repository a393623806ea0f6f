// What the CLI prints for machines and editors: `oe --version`, `oe schema` with the loaded kinds'
// fields (checked against every shipped example, so the schemas and the loader cannot drift
// apart), and the --json forms of `oe state` and `oe inspect`.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

// Without this, valijson prints and abort()s on a malformed schema.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
// GCC 12 at -O3 reports a false -Wrestrict inside valijson's json_pointer string handling.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#pragma GCC diagnostic pop

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

// YAML to JSON as an editor's YAML language server sees it (YAML 1.2 core schema scalars).
json toJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) {
        out.push_back(toJson(item));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) {
        out[entry.first.as<std::string>()] = toJson(entry.second);
      }
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() == "!") {
        return text;  // quoted: always a string
      }
      static const std::regex kInt(R"([-+]?[0-9]+)");
      static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
      if (text == "true" || text == "false") {
        return text == "true";
      }
      if (text == "null" || text == "~") {
        return nullptr;
      }
      if (std::regex_match(text, kInt)) {
        return std::stoll(text);
      }
      if (std::regex_match(text, kFloat)) {
        return std::stod(text);
      }
      return text;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
    default:
      return nullptr;
  }
}

class CliOutputs : public OeTest {
 protected:
  // The errors of `document` against `oe schema`'s output (empty when it validates).
  // With `open_kinds`, against `oe schema --open-kinds` (any kind name).
  std::vector<std::string> schemaErrors(const json& document, bool open_kinds = false) {
    json& schema_json = open_kinds ? open_schema_json_ : schema_json_;
    std::unique_ptr<valijson::Schema>& schema = open_kinds ? open_schema_ : schema_;
    if (!schema) {
      auto printed = open_kinds ? oe({"schema", "--open-kinds"}) : oe({"schema"});
      EXPECT_EQ(printed.exit_code, 0) << printed.err;
      schema_json = json::parse(printed.out);
      schema = std::make_unique<valijson::Schema>();
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      valijson::adapters::NlohmannJsonAdapter adapter(schema_json);
      parser.populateSchema(adapter, *schema);
    }
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(document);
    std::vector<std::string> errors;
    if (!validator.validate(*schema, target, &results)) {
      valijson::ValidationResults::Error error;
      while (results.popError(error)) {
        std::string where;
        for (const auto& part : error.context) {
          where += part;
        }
        errors.push_back(where + ": " + error.description);
      }
    }
    return errors;
  }
  void copyExample(const std::string& name) {
    const auto example = std::filesystem::path(OE_SOURCE_DIR) / "examples" / name;
    for (const auto& entry : std::filesystem::directory_iterator(example)) {
      if (entry.path().filename() != ".openexpertise") {
        std::filesystem::copy(entry.path(), dir_.path() / entry.path().filename(),
                              std::filesystem::copy_options::recursive);
      }
    }
  }

  json schema_json_;
  std::unique_ptr<valijson::Schema> schema_;
  json open_schema_json_;
  std::unique_ptr<valijson::Schema> open_schema_;
};

TEST_F(CliOutputs, VersionIsTheProjectsVersionAndTheCommit) {
  // The commit itself is checked against git in tests/packaging (Packaging.Version*).
  for (const char* flag : {"--version", "-V"}) {
    auto r = oe({flag});
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_TRUE(r.out.starts_with("oe " + std::string(OE_PROJECT_VERSION) + " (commit "))
        << flag << ": " << r.out;
    EXPECT_TRUE(r.out.ends_with(")\n")) << flag << ": " << r.out;
  }
}

TEST_F(CliOutputs, SchemaIsADraft7SchemaThatEveryShippedExampleSatisfies) {
  // Every experience oe ships: the examples (nested ones and those beside a plugin's sources
  // included) and the `oe init` templates. A kind's field that the printed schema refuses here
  // is a bug of the plugin's schema or of the example.
  int examples = 0;
  int beside_plugins = 0;
  const auto source = std::filesystem::path(OE_SOURCE_DIR);
  for (const char* root : {"examples", "host/templates"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source / root)) {
      if (entry.path().filename() != "experience.yaml" ||
          entry.path().string().find(".openexpertise") != std::string::npos) {
        continue;
      }
      ++examples;
      const json document = toJson(YAML::LoadFile(entry.path().string()));
      // An example beside its plugin's sources (examples/c-plugin, rust-plugin) uses a kind this
      // oe has not loaded: with the default schema only its `kind` is flagged.
      const auto sources = entry.path().parent_path().parent_path();
      if (entry.path().parent_path().filename() == "experience" &&
          (std::filesystem::exists(sources / "CMakeLists.txt") ||
           std::filesystem::exists(sources / "Cargo.toml"))) {
        ++beside_plugins;
        EXPECT_EQ(schemaErrors(document, /*open_kinds=*/true), std::vector<std::string>{})
            << entry.path();
        // (valijson also reports each enclosing object as "Failed to validate ...")
        const auto errors = schemaErrors(document);
        EXPECT_FALSE(errors.empty()) << entry.path();
        for (const std::string& error : errors) {
          EXPECT_TRUE(error.find("[kind]: Failed to match against any enum values") !=
                          std::string::npos ||
                      error.find("Failed to validate") != std::string::npos)
              << entry.path() << ": " << error;
        }
        continue;
      }
      EXPECT_EQ(schemaErrors(document), std::vector<std::string>{}) << entry.path();
    }
  }
  EXPECT_GE(examples, 20);
  EXPECT_EQ(beside_plugins, 2);
  EXPECT_EQ(schema_json_["$schema"], "http://json-schema.org/draft-07/schema#");
  EXPECT_EQ(schema_json_["required"], json({"name", "version", "state", "graph"}));
}

TEST_F(CliOutputs, SchemaRejectsWhatTheLoaderRejects) {
  const json good = toJson(YAML::Load(R"(name: x
version: 0.1.0
state: { schema: { n: { type: number } } }
graph:
  nodes: [ { id: a, kind: tool, impl: ./a.mjs, writes: [n] } ]
  edges: []
runtime: { concurrency: 2, limits: { openai: { max_in_flight: 1 } } }
)"));
  EXPECT_EQ(schemaErrors(good), std::vector<std::string>{});
  json misspelled = good;
  misspelled["grpah"] = misspelled["graph"];
  misspelled.erase("graph");
  EXPECT_FALSE(schemaErrors(misspelled).empty());
  json zero_limit = good;
  zero_limit["runtime"]["limits"]["openai"]["max_in_flight"] = 0;
  EXPECT_FALSE(schemaErrors(zero_limit).empty());
  json no_edges = good;
  no_edges["graph"].erase("edges");
  EXPECT_FALSE(schemaErrors(no_edges).empty());
}

TEST_F(CliOutputs, SchemaChecksTheLoadedKindsFieldsAndNamesOnlyTheLoadedKinds) {
  const json good = toJson(YAML::Load(R"(name: x
version: 0.1.0
state: { schema: { text: { type: string } } }
graph:
  nodes:
    - { id: ask, kind: agent, prompt: prompts/ask.md, max_tokens: 200, writes: [text] }
    - { id: scrape, kind: acme-scraper, url: "https://example.com", depth: 2 }
  edges: [ { from: ask, to: scrape } ]
)"));
  // Open kinds first, so each error below is the field's, not acme-scraper's.
  EXPECT_EQ(schemaErrors(good, /*open_kinds=*/true), std::vector<std::string>{});
  json lots = good;
  lots["graph"]["nodes"][0]["max_tokens"] = "lots";
  const auto errors = schemaErrors(lots, true);
  EXPECT_FALSE(errors.empty());
  json no_prompt = good;
  no_prompt["graph"]["nodes"][0].erase("prompt");
  EXPECT_FALSE(schemaErrors(no_prompt, true).empty());
  json bad_provider = good;
  bad_provider["graph"]["nodes"][0] = {
      {"id", "cli"}, {"kind", "cli-agent"}, {"provider", "clippy"}, {"prompt", "p.md"}};
  EXPECT_FALSE(schemaErrors(bad_provider, true).empty());
  // `kind` is one of the loaded kinds, so a typo is flagged; --open-kinds takes any name.
  EXPECT_FALSE(schemaErrors(good).empty());  // acme-scraper is not loaded
  const json& kind = schema_json_["definitions"]["node"]["properties"]["kind"];
  for (const char* shipped : {"tool", "agent", "skill", "dataset", "cli-agent", "experience"}) {
    EXPECT_NE(std::find(kind["enum"].begin(), kind["enum"].end(), shipped), kind["enum"].end())
        << shipped;
  }
  json typo = good;
  typo["graph"]["nodes"][1] = {{"id", "t"}, {"kind", "tooool"}, {"impl", "./t.mjs"}};
  EXPECT_FALSE(schemaErrors(typo).empty());
  const json& open = open_schema_json_["definitions"]["node"]["properties"]["kind"];
  EXPECT_FALSE(open.contains("enum"));
  EXPECT_NE(std::find(open["examples"].begin(), open["examples"].end(), "tool"),
            open["examples"].end());
}

TEST_F(CliOutputs, SchemaCoreHasNoKindsAndExperienceAddsTheFoldersPlugins) {
  auto core = oe({"schema", "--core"});
  ASSERT_EQ(core.exit_code, 0) << core.err;
  const json core_schema = json::parse(core.out);
  EXPECT_FALSE(core_schema["definitions"]["node"].contains("allOf"));
  EXPECT_FALSE(core_schema["definitions"]["node"]["properties"]["kind"].contains("examples"));

  // The c-plugin example's text-upper kind, found only in the experience's own plugins/.
  const auto build = std::filesystem::path(OE_EXE).parent_path().parent_path();
  const auto so = build / "tests" / "abi" / "fixtures" / "c_upper" / "c_upper.so";
  ASSERT_TRUE(std::filesystem::exists(so)) << so;
  std::filesystem::create_directories(dir_.path() / "exp" / "plugins");
  std::filesystem::copy_file(so, dir_.path() / "exp" / "plugins" / "c_upper.so");
  // With its manifest: `oe schema` reads that, never the library (docs/trust.md).
  std::filesystem::copy_file(so.string() + ".oe-manifest.json",
                             dir_.path() / "exp" / "plugins" / "c_upper.so.oe-manifest.json");
  auto has_upper = [](const json& schema) {
    const json& kinds = schema["definitions"]["node"]["properties"]["kind"]["enum"];
    return std::find(kinds.begin(), kinds.end(), "text-upper") != kinds.end();
  };
  auto without = oe({"schema"});  // (OE_PLUGIN_PATH is unset by oe())
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_FALSE(has_upper(json::parse(without.out)));
  auto with = oe({"schema", "--experience", (dir_.path() / "exp").string()});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_TRUE(has_upper(json::parse(with.out)));

  auto missing = oe({"schema", "--experience", (dir_.path() / "nowhere").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no such folder"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(oe({"schema", "--core", "--experience", dir_.path().string()}).exit_code, 0);
}

TEST_F(CliOutputs, StateJsonPrintsTheWholeStateOrOneField) {
  copyExample("hello-tool");
  int code = -1;
  runJson({}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  auto all = oe({"state", "--json", "--experience", dir_.path().string()});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(json::parse(all.out), json({{"greeting", "hello, World"}}));
  auto one = oe({"state", "greeting", "--json", "--experience", dir_.path().string()});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out), "hello, World");
}

TEST_F(CliOutputs, InspectJsonIsTheRunsEventLog) {
  copyExample("hello-tool");
  int code = -1;
  json run = runJson({}, &code);
  ASSERT_EQ(code, 0) << last_stderr_;
  auto r = oe({"inspect", run["run_id"], "--json", "--experience", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json printed = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(printed.is_array()) << r.out;
  const auto logged = events(run["run_id"]);
  EXPECT_EQ(printed, json(logged));
}

}  // namespace
}  // namespace oe::test
