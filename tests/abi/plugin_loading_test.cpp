// The host's side of the ABI, through the real `oe` binary: `oe plugins` lists what is found
// (from manifests, for plugins that are not built in) and refuses what must not load, with a
// reason a user can act on, where the plugin is loaded (the manifest tool at build time, a run
// once trusted); a run uses a fixture kind, and a plugin that throws fails its node, not the
// process.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/oe_binary.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {
namespace {

TEST_F(OeBinary, PluginsListsTheGoodFixture) {
  const ProcessResult r = oe({"plugins"}, {"good"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(std::regex_search(r.out, listingLine("dev.oe.fixture.good", "abi-good", "good.so")))
      << r.describe();
  EXPECT_EQ(r.err.find("refused plugin"), std::string::npos) << r.describe();
}

TEST_F(OeBinary, PluginsJsonIsAnArrayOfDescriptions) {
  const ProcessResult r = oe({"plugins", "--json"}, {"good"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.describe();
  const nlohmann::json list = nlohmann::json::parse(r.out);
  ASSERT_TRUE(list.is_array()) << r.out;
  const nlohmann::json* good = nullptr;
  for (const auto& item : list) {
    ASSERT_TRUE(item.is_object()) << item;
    for (const char* key : {"id", "version", "abi", "kinds", "path"}) {
      EXPECT_TRUE(item.contains(key)) << key << " missing in " << item;
    }
    if (item.value("id", "") == "dev.oe.fixture.good") {
      good = &item;
    }
  }
  ASSERT_NE(good, nullptr) << r.out;
  EXPECT_EQ((*good)["version"], "0.0.1");
  EXPECT_EQ((*good)["abi"], kThisAbi);
  EXPECT_EQ((*good)["kinds"], nlohmann::json::array({"abi-good"}));
  EXPECT_EQ((*good)["path"], canonical("good", "good.so"));
}

struct RefusalCase {
  const char* dir;
  const char* file;
  std::vector<std::string> reasons;  // substrings of the reason
};

void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.dir << "/" << c.file; }

class Refusal : public OeBinary, public ::testing::WithParamInterface<RefusalCase> {};

// A one-node experience using a fixture kind, in a temp dir (its .openexpertise/ lands there).
std::filesystem::path writeExperience(const std::filesystem::path& dir, const std::string& kind);

// The loader's refusals: where a plugin is loaded, which for one that is not built in is at
// build time (oe-plugin-manifest, run by oe_add_plugin) and in a run once it is trusted. Either
// says why, in the same words; the commands that only describe plugins say it has no manifest.
TEST_P(Refusal, IsReportedWhereThePluginIsLoaded) {
  const RefusalCase& c = GetParam();
  const std::string path = canonical(c.dir, c.file);
  const auto expectReasons = [&](const std::string& err, const std::string& prefix) {
    const size_t at = err.find(prefix);
    ASSERT_NE(at, std::string::npos) << "expected `" << prefix << "...` in\n" << err;
    const std::string line = err.substr(at, err.find('\n', at) - at);
    for (const std::string& reason : c.reasons) {
      EXPECT_NE(line.find(reason), std::string::npos) << "`" << reason << "` not in: " << line;
    }
  };

  ProcessOptions options;
  options.env["HOME"] = home_.path().string();
  const ProcessResult built = runProcess({OE_PLUGIN_MANIFEST_EXE, path}, options);
  ASSERT_TRUE(built.exited) << "the manifest tool must not crash on a bad plugin: "
                            << built.describe();
  EXPECT_EQ(built.exit_code, 1) << built.describe();
  expectReasons(built.err, "oe-plugin-manifest: refused plugin " + path + ": ");
  EXPECT_FALSE(std::filesystem::exists(path + ".oe-manifest.json"));

  trust({c.dir});
  TempDir experience;
  writeExperience(experience.path(), "abi-good");
  const ProcessResult r = oe({"run", experience.path().string()}, {c.dir});
  ASSERT_TRUE(r.exited) << "oe must not crash on a bad plugin: " << r.describe();
  EXPECT_EQ(r.exit_code, 1) << "the graph's kind is gone with its plugin: " << r.describe();
  expectReasons(r.err, "oe: warning: refused plugin " + path + ": ");

  const ProcessResult listed = oe({"plugins"}, {c.dir});
  EXPECT_EQ(listed.exit_code, 1) << listed.describe();
  EXPECT_NE(listed.err.find("oe: refused plugin " + path + ": no manifest"), std::string::npos)
      << listed.describe();
  EXPECT_EQ(listed.out.find(path), std::string::npos) << "a refused plugin is not listed\n"
                                                      << listed.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Refusal,
    ::testing::Values(
        RefusalCase{"not_a_library", "bogus.so", {"not a loadable shared library"}},
        RefusalCase{"missing_entry", "not_a_plugin.so", {"does not export oe_plugin_entry_v1"}},
        RefusalCase{"wrong_major",
                    "wrong_major.so",
                    {"built for plugin ABI 9.0", "this oe speaks " + kThisAbi}},
        RefusalCase{"wrong_minor",
                    "wrong_minor.so",
                    {"built for plugin ABI 0.99", "this oe speaks " + kThisAbi}},
        RefusalCase{"min_host_abi",
                    "min_host_abi.so",
                    {"needs a host of plugin ABI 0.9 or newer (min_host_abi)",
                     "this oe speaks " + kThisAbi}},
        RefusalCase{
            "entry_returns_null", "entry_returns_null.so", {"refused to load into this host"}},
        RefusalCase{"struct_too_small", "struct_too_small.so", {"descriptor too small (8 bytes)"}},
        // Ends before node_kind_at: older SDKs never had less, so this is no oe plugin.
        RefusalCase{"entry_below_required",
                    "entry_below_required.so",
                    {"descriptor too small (" +
                         std::to_string(offsetof(oe_plugin_entry, node_kind_at)) + " bytes",
                     "every version has at least " +
                         std::to_string(offsetof(oe_plugin_entry, get_extension))}},
        RefusalCase{"kind_below_required",
                    "kind_below_required.so",
                    {"node kind #0 is malformed", "smaller than the members every version has"}},
        RefusalCase{"entry_flags", "entry_flags.so", {"descriptor flags are 1", "they must be 0"}},
        RefusalCase{"kind_flags",
                    "kind_flags.so",
                    {"node kind #0 (\"abi-good\")", "sets flags " + std::to_string(0x80000000u),
                     "known: OE_NODE_KIND_REENTRANT"}},
        RefusalCase{"schema_not_json",
                    "schema_not_json.so",
                    {"plugin \"dev.oe.fixture.schema_not_json\", node kind #0 (\"abi-good\")",
                     "its spec_schema_json is not JSON"}},
        RefusalCase{"schema_ref_cycle",
                    "schema_ref_cycle.so",
                    {"plugin \"dev.oe.fixture.schema_ref_cycle\", node kind #0 (\"abi-good\")",
                     "refers to itself", "\"#/definitions/a\" -> \"#/definitions/b\""}},
        RefusalCase{"schema_deep",
                    "schema_deep.so",
                    {"plugin \"dev.oe.fixture.schema_deep\", node kind #0 (\"abi-good\")",
                     "levels deep"}},
        RefusalCase{"init_fails",
                    "init_fails.so",
                    {"init failed", "fixture init refused: OE_FIXTURE_TOKEN is not set"}}),
    [](const ::testing::TestParamInfo<RefusalCase>& param_info) {
      return std::string(param_info.param.dir);
    });

TEST_F(OeBinary, ARefusedPluginDoesNotHideTheOthers) {
  const ProcessResult r = oe({"plugins"}, {"wrong_major", "good", "not_a_library"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(std::regex_search(r.out, listingLine("dev.oe.fixture.good", "abi-good", "good.so")))
      << r.describe();
  EXPECT_NE(r.err.find("oe: refused plugin " + canonical("wrong_major", "wrong_major.so")),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.err.find("oe: refused plugin " + canonical("not_a_library", "bogus.so")),
            std::string::npos)
      << r.describe();
}

TEST_F(OeBinary, DuplicateKindKeepsTheFirstProviderAndWarns) {
  const ProcessResult r = oe({"plugins"}, {"duplicate_kind"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << "a shadowed kind is a warning, not an error\n" << r.describe();
  EXPECT_NE(r.err.find("kind \"abi-good\" is already provided by " +
                       canonical("duplicate_kind", "dup_a.so")),
            std::string::npos)
      << r.describe();
  EXPECT_TRUE(std::regex_search(r.out, listingLine("dev.oe.fixture.dup-a", "abi-good", "dup_a.so")))
      << r.describe();
  EXPECT_EQ(r.err.find("refused plugin"), std::string::npos) << r.describe();
}

// A one-node experience using a fixture kind, in a temp dir (its .openexpertise/ lands there).
std::filesystem::path writeExperience(const std::filesystem::path& dir, const std::string& kind) {
  writeFile(dir / "experience.yaml", R"(name: abi-fixture-run
version: 0.1.0
state:
  schema:
    echo: { type: object }
graph:
  nodes:
    - id: say
      kind: )" + kind + R"(
      args: { text: "hello from the abi fixture" }
      writes: [echo]
  edges: []
)");
  return dir;
}

// A kind schema that would crash what applies it, in a manifest (written by hand: the manifest
// tool refuses to write one) and in the library: every command refuses the plugin, names it and
// its kind, and goes on without it (the kind is then unknown). The commands that describe read
// the manifest; `oe run` loads the (trusted) library.
struct UnusableSchema {
  const char* fixture;
  std::string schema;  // what the fixture's kind returns as spec_schema_json
};

void PrintTo(const UnusableSchema& c, std::ostream* os) { *os << c.fixture; }

class UnusableKindSchema : public OeBinary, public ::testing::WithParamInterface<UnusableSchema> {};

std::string sha256Of(const std::filesystem::path& file) {
  const ProcessResult r = runProcess({"sha256sum", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return r.out.substr(0, 64);
}

TEST_P(UnusableKindSchema, IsRefusedByValidateRunAndSchema) {
  const UnusableSchema& c = GetParam();
  const std::string fixture = c.fixture;
  TempDir plugins;
  const std::filesystem::path library =
      std::filesystem::canonical(plugins.path()) / (fixture + ".so");
  std::filesystem::copy_file(fixtureFile(fixture, fixture + ".so"), library);
  const nlohmann::json manifest = {
      {"oe_plugin_manifest", 1},
      {"sha256", sha256Of(library)},
      {"plugin", {{"id", "dev.oe.fixture." + fixture}, {"version", "0.0.1"}}},
      {"abi", {{"version", kThisAbi}, {"min_host", kThisAbi}}},
      {"kinds", {{{"kind", "abi-good"}, {"flags", nlohmann::json::array()},
                  {"spec_schema_json", c.schema}}}}};
  writeFile(library.string() + ".oe-manifest.json", manifest.dump());
  const auto oe_here = [&](const std::vector<std::string>& args) {
    ProcessOptions options;
    options.env["OE_PLUGIN_PATH"] = plugins.path().string();
    options.env["HOME"] = home_.path().string();
    options.env["OE_TRUST_FILE"] = trustFile().string();
    options.cwd = home_.path();
    std::vector<std::string> argv{OE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv, options);
  };
  ASSERT_EQ(oe_here({"trust", library.string()}).exit_code, 0);
  TempDir experience;
  writeExperience(experience.path(), "abi-good");
  const std::vector<std::vector<std::string>> commands = {
      {"validate", experience.path().string()},
      {"run", experience.path().string()},
      {"schema", "--experience", experience.path().string()}};
  for (const auto& command : commands) {
    const ProcessResult r = oe_here(command);
    ASSERT_TRUE(r.exited) << "oe " << command[0] << " crashed: " << r.describe();
    EXPECT_LT(r.exit_code, 128) << r.describe();
    EXPECT_NE(r.err.find("refused plugin " + library.string()), std::string::npos)
        << "oe " << command[0] << ": " << r.describe();
    EXPECT_NE(r.err.find("plugin \"dev.oe.fixture." + fixture + "\", node kind #0 (\"abi-good\")"),
              std::string::npos)
        << "oe " << command[0] << ": " << r.describe();
    if (command[0] != "schema") {
      EXPECT_EQ(r.exit_code, 1) << "the graph's kind is gone with its plugin: " << r.describe();
    }
  }
}

// FIXTURE_DEEP_SCHEMA=100000: {"items": ... {} ...} 100000 levels deep.
std::string deepSchema() {
  constexpr int kDepth = 100000;
  std::string text;
  for (int i = 0; i < kDepth; ++i) {
    text += "{\"items\":";
  }
  text += "{}";
  text += std::string(kDepth, '}');
  return text;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, UnusableKindSchema,
    ::testing::Values(
        UnusableSchema{"schema_not_json", "{type: object, properties: {text: {type: string}}}"},
        UnusableSchema{"schema_ref_cycle",
                       "{\"$ref\": \"#/definitions/a\", \"definitions\": {\"a\": {\"$ref\": "
                       "\"#/definitions/b\"}, \"b\": {\"allOf\": [{\"$ref\": \"#/definitions/a\"}]}}}"},
        UnusableSchema{"schema_deep", deepSchema()}),
    [](const ::testing::TestParamInfo<UnusableSchema>& param_info) {
      return std::string(param_info.param.fixture);
    });

TEST_F(OeBinary, RunUsesTheGoodFixtureKind) {
  TempDir experience;
  writeExperience(experience.path(), "abi-good");
  trust({"good"});
  const ProcessResult r = oe({"run", experience.path().string()}, {"good"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  // The final state holds the echoed request, args included.
  EXPECT_NE((r.out + r.err).find("hello from the abi fixture"), std::string::npos) << r.describe();
  EXPECT_NE((r.out + r.err).find("success"), std::string::npos) << r.describe();
}

TEST_F(OeBinary, ExceptionInInvokeFailsTheNodeNotTheProcess) {
  TempDir experience;
  writeExperience(experience.path(), "abi-throws");
  trust({"throws_in_invoke"});
  const ProcessResult r = oe({"run", experience.path().string()}, {"throws_in_invoke"});
  ASSERT_TRUE(r.exited) << "oe crashed: " << r.describe();
  EXPECT_LT(r.exit_code, 128) << r.describe();
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("fixture exploded on purpose"), std::string::npos) << r.describe();
  EXPECT_NE(all.find("failed"), std::string::npos) << r.describe();
}

}  // namespace
}  // namespace oe::abi_test
