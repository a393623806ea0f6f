// Plugins that run nothing before they are trusted (docs/trust.md), through the real `oe`: an
// experience's own plugin whose library constructor leaves a mark is described by validate,
// graph, schema, plugins, doctor, install, installed and the MCP tools without ever being loaded
// (the mark never appears), refused by `oe run` without a terminal with the `oe trust` command to
// run, and loaded once trusted (the mark appears: the test can fail); a rebuilt library is
// refused again and its manifest is stale; a vendored plugin cannot take the built-in `tool`
// kind or `openai` provider unless the experience overrides them; concurrent `oe trust`
// calls leave a whole store with every record.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/oe_binary.hpp"
#include "abi/process.hpp"
#include "support/fake_llm_server.hpp"

namespace oe::abi_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fixture library and its manifest, copied into <experience>/plugins/.
fs::path vendor(const fs::path& experience, const std::string& fixture) {
  fs::create_directories(experience / "plugins");
  const fs::path library = fs::canonical(experience / "plugins") / (fixture + ".so");
  fs::copy_file(fixtureFile(fixture, fixture + ".so"), library);
  fs::copy_file(fixtureFile(fixture, fixture + ".so.oe-manifest.json"),
                library.string() + ".oe-manifest.json");
  return library;
}

std::string readAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Trust : public OeBinary {
 protected:
  void SetUp() override {
    experience_ = fs::canonical(dir_.path()) / "flow";
    mark_ = fs::canonical(dir_.path()) / "constructor-ran";
  }

  // `oe <args>` with the constructor's mark file named, no plugin path of its own.
  ProcessResult oeMarked(const std::vector<std::string>& args,
                         std::map<std::string, std::optional<std::string>> env = {}) {
    env["OE_FIXTURE_CONSTRUCTOR_MARK"] = mark_.string();
    return oe(args, {}, env);
  }

  void writeConstructorExperience() {
    writeFile(experience_ / "experience.yaml", R"(name: vendored
version: 0.1.0
state:
  schema:
    echo: { type: object }
graph:
  nodes:
    - { id: say, kind: abi-constructor, args: { text: hi }, writes: [echo] }
  edges: []
)");
  }

  // Every command that only describes plugins, each followed by a look for the mark.
  void describeWithoutLoading(const fs::path& library) {
    const std::string dir = experience_.string();
    const ProcessResult validate = oeMarked({"validate", dir});
    EXPECT_EQ(validate.exit_code, 0) << "validate knows the kind from the manifest\n"
                                     << validate.describe();
    EXPECT_NE(validate.out.find("experience valid"), std::string::npos) << validate.describe();
    EXPECT_FALSE(fs::exists(mark_)) << "oe validate ran the plugin's code";

    const ProcessResult graph = oeMarked({"graph", dir});
    EXPECT_EQ(graph.exit_code, 0) << graph.describe();
    EXPECT_NE(graph.out.find("say[\"say\"]"), std::string::npos) << graph.describe();
    EXPECT_FALSE(fs::exists(mark_)) << "oe graph ran the plugin's code";

    const ProcessResult schema = oeMarked({"schema", "--experience", dir});
    EXPECT_EQ(schema.exit_code, 0) << schema.describe();
    EXPECT_NE(schema.out.find("\"abi-constructor\""), std::string::npos);
    EXPECT_FALSE(fs::exists(mark_)) << "oe schema ran the plugin's code";

    const ProcessResult plugins = oeMarked({"plugins", "--experience", dir});
    EXPECT_EQ(plugins.exit_code, 0) << plugins.describe();
    EXPECT_TRUE(std::regex_search(
        plugins.out,
        listingLine("dev.oe.fixture.constructor", "abi-constructor", library.filename().string())))
        << plugins.describe();
    EXPECT_NE(plugins.out.find("[not trusted]  " + library.string()), std::string::npos)
        << plugins.describe();
    EXPECT_FALSE(fs::exists(mark_)) << "oe plugins ran the plugin's code";

    const ProcessResult doctor = oeMarked({"doctor", "--json", "--experience", dir});
    const json report = json::parse(doctor.out, nullptr, false);
    ASSERT_TRUE(report.is_object()) << doctor.describe();
    EXPECT_EQ(report["plugin_dirs"][0]["plugins"][0]["trust"], "not trusted") << doctor.out;
    EXPECT_FALSE(fs::exists(mark_)) << "oe doctor ran the plugin's code";

    // The MCP tools that check an experience: oe_validate and oe_graph.
    const fs::path requests = dir_.path() / "mcp-requests.jsonl";
    writeFile(
        requests,
        json({{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-06-18"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}})
                .dump() +
            "\n" + json({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).dump() +
            "\n" +
            json({{"jsonrpc", "2.0"},
                  {"id", 2},
                  {"method", "tools/call"},
                  {"params", {{"name", "oe_validate"}, {"arguments", {{"experience_path", dir}}}}}})
                .dump() +
            "\n" +
            json({{"jsonrpc", "2.0"},
                  {"id", 3},
                  {"method", "tools/call"},
                  {"params", {{"name", "oe_graph"}, {"arguments", {{"experience_path", dir}}}}}})
                .dump() +
            "\n");
    ProcessOptions options;
    options.env["OE_PLUGIN_PATH"] = "";
    options.env["HOME"] = home_.path().string();
    options.env["OE_TRUST_FILE"] = trustFile().string();
    options.env["OE_FIXTURE_CONSTRUCTOR_MARK"] = mark_.string();
    options.cwd = dir_.path();
    // The server ends its calls when its input ends: the script keeps it open until both
    // answers are back, then closes it.
    const std::string script = R"(coproc MCP { exec "$0" mcp; }
while IFS= read -r request; do printf '%s\n' "$request" >&"${MCP[1]}"; done < "$1"
answered=0
while IFS= read -r line <&"${MCP[0]}"; do
  printf '%s\n' "$line"
  case $line in '{"id":2,'*|'{"id":3,'*) answered=$((answered + 1)) ;; esac
  [ "$answered" -ge 2 ] && break
done
exec {MCP[1]}>&-
wait)";
    const ProcessResult mcp =
        runProcess({"bash", "-c", script, OE_EXE, requests.string()}, options);
    EXPECT_NE(mcp.out.find("\"id\":2"), std::string::npos) << mcp.describe();
    EXPECT_NE(mcp.out.find("\"id\":3"), std::string::npos) << mcp.describe();
    EXPECT_NE(mcp.out.find("flowchart"), std::string::npos) << mcp.describe();
    EXPECT_EQ(mcp.out.find("unknown node kind"), std::string::npos) << mcp.describe();
    EXPECT_FALSE(fs::exists(mark_)) << "oe mcp's tools ran the plugin's code";
  }

  TempDir dir_;
  fs::path experience_;
  fs::path mark_;
};

TEST_F(Trust, APluginIsDescribedWithoutLoadingRefusedUntrustedAndRunOnceTrusted) {
  writeConstructorExperience();
  const fs::path library = vendor(experience_, "constructor");
  describeWithoutLoading(library);

  // Without a terminal, a run refuses it in one line naming the file and the command.
  const ProcessResult refused = oeMarked({"run", experience_.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.describe();
  EXPECT_NE(refused.err.find(library.string() + ": error: not trusted (sha256 "), std::string::npos)
      << refused.describe();
  EXPECT_NE(refused.err.find("review it, then run: oe trust " + library.string() + "\n"),
            std::string::npos)
      << refused.describe();
  EXPECT_FALSE(fs::exists(mark_)) << "an untrusted plugin was loaded by oe run";
  EXPECT_FALSE(fs::exists(trustFile())) << "a refusal writes nothing";

  // `oe trust <experience>` trusts its plugins/, showing what each is (from the manifest).
  const ProcessResult trusted = oeMarked({"trust", experience_.string()});
  ASSERT_EQ(trusted.exit_code, 0) << trusted.describe();
  EXPECT_NE(trusted.out.find("trusting " + library.string()), std::string::npos);
  EXPECT_NE(trusted.out.find("plugin dev.oe.fixture.constructor 0.0.1; kinds: abi-constructor"),
            std::string::npos)
      << trusted.describe();
  EXPECT_FALSE(fs::exists(mark_)) << "oe trust ran the plugin's code";
  const json store = json::parse(readAll(trustFile()), nullptr, false);
  ASSERT_TRUE(store.is_object()) << readAll(trustFile());
  ASSERT_EQ(store["trusted"].size(), 1u) << store.dump(2);
  EXPECT_EQ(store["trusted"][0]["path"], library.string());
  EXPECT_EQ(store["trusted"][0]["plugin"], "dev.oe.fixture.constructor");

  const ProcessResult run = oeMarked({"run", experience_.string(), "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(json::parse(run.out)["status"], "success");
  EXPECT_TRUE(fs::exists(mark_)) << "the trusted plugin was loaded, so its constructor ran";
  fs::remove(mark_);

  // Describing still loads nothing, trusted or not.
  EXPECT_EQ(oeMarked({"validate", experience_.string()}).exit_code, 0);
  EXPECT_FALSE(fs::exists(mark_));

  const ProcessResult list = oeMarked({"trust", "--list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.describe();
  EXPECT_EQ(json::parse(list.out)[0]["state"], "trusted") << list.out;
  const ProcessResult removed = oeMarked({"trust", "--remove", experience_.string()});
  ASSERT_EQ(removed.exit_code, 0) << removed.describe();
  EXPECT_NE(removed.out.find("removed 1 record"), std::string::npos) << removed.describe();
  EXPECT_EQ(oeMarked({"run", experience_.string()}).exit_code, 1);
  EXPECT_FALSE(fs::exists(mark_));
}

TEST_F(Trust, AnInstalledExperiencesPluginIsNotLoadedByInstallOrInstalled) {
  writeConstructorExperience();
  vendor(experience_, "constructor");
  for (const std::vector<std::string>& git :
       {std::vector<std::string>{"git", "init", "-q", "-b", "main"},
        std::vector<std::string>{"git", "add", "-A"},
        std::vector<std::string>{"git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                                 "commit", "-q", "-m", "a flow with its own plugin"}}) {
    ProcessOptions options;
    options.cwd = experience_;
    options.env["HOME"] = home_.path().string();
    const ProcessResult r = runProcess(git, options);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  const fs::path target = fs::canonical(dir_.path()) / "target";
  fs::create_directories(target);
  const ProcessResult install =
      oeMarked({"install", experience_.string(), "--experience", target.string()});
  ASSERT_EQ(install.exit_code, 0) << install.describe();
  EXPECT_FALSE(fs::exists(mark_)) << "oe install ran the plugin's code";
  const ProcessResult installed =
      oeMarked({"installed", "--json", "--experience", target.string()});
  ASSERT_EQ(installed.exit_code, 0) << installed.describe();
  const json list = json::parse(installed.out);
  ASSERT_EQ(list.size(), 1u) << installed.out;
  EXPECT_EQ(list[0]["valid"], true) << "its kind is known from the manifest: " << installed.out;
  EXPECT_FALSE(fs::exists(mark_)) << "oe installed ran the plugin's code";
}

TEST_F(Trust, ARebuiltLibraryIsRefusedAgainAndItsManifestIsStale) {
  writeConstructorExperience();
  const fs::path library = vendor(experience_, "constructor");
  ASSERT_EQ(oeMarked({"trust", library.string()}).exit_code, 0);
  ASSERT_EQ(oeMarked({"run", experience_.string()}).exit_code, 0);
  fs::remove(mark_);

  // Rebuilt: other bytes, still a loadable library.
  std::ofstream(library, std::ios::app) << "rebuilt";
  const ProcessResult refused = oeMarked({"run", experience_.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.describe();
  EXPECT_NE(refused.err.find(library.string() + ": error: changed since it was trusted"),
            std::string::npos)
      << refused.describe();
  EXPECT_NE(refused.err.find("review it, then run: oe trust " + library.string()),
            std::string::npos)
      << refused.describe();
  EXPECT_FALSE(fs::exists(mark_)) << "a changed library was loaded";

  // Its manifest describes the old bytes: refused, and the kind is unknown with the hint.
  const ProcessResult validate = oeMarked({"validate", experience_.string()});
  EXPECT_EQ(validate.exit_code, 1) << validate.describe();
  EXPECT_NE(validate.err.find("refused plugin " + library.string() + ": its manifest"),
            std::string::npos)
      << validate.describe();
  EXPECT_NE(validate.err.find("is stale"), std::string::npos) << validate.describe();
  EXPECT_NE(validate.err.find("unknown node kind \"abi-constructor\""), std::string::npos)
      << validate.describe();
  EXPECT_NE(validate.err.find("Plugins found but not read, one of which may provide it: " +
                              library.string()),
            std::string::npos)
      << validate.describe();
  EXPECT_NE(validate.err.find("oe-plugin-manifest " + library.string()), std::string::npos)
      << validate.describe();
  EXPECT_FALSE(fs::exists(mark_));

  // The manifest tool (the builder's command, which loads the library) makes it current again.
  const ProcessResult written = runProcess({OE_PLUGIN_MANIFEST_EXE, library.string()});
  ASSERT_EQ(written.exit_code, 0) << written.describe();
  EXPECT_EQ(oeMarked({"validate", experience_.string()}).exit_code, 0);
}

TEST_F(Trust, AVendoredPluginTakesABuiltInKindOrProviderOnlyWhereTheExperienceSaysSo) {
  test::FakeLlmServer server;
  server.setHandler([](const test::RecordedRequest&) {
    return test::FakeLlmServer::openAiText("from the server");
  });
  const auto yaml = [](const std::string& plugins) {
    return R"(name: claims
version: 0.1.0
)" + plugins +
           R"(state:
  schema:
    who: { type: string }
    echo: { type: object }
    answer: { type: string }
graph:
  nodes:
    - { id: who, kind: tool, impl: ./tools/who.sh, writes: [who, echo] }
    - { id: ask, kind: agent, prompt: prompts/ask.md, writes: [answer] }
  edges: []
)";
  };
  writeFile(
      experience_ / "tools" / "who.sh",
      "#!/bin/sh\ncat >/dev/null\necho '{\"state_delta\":{\"who\":\"the built-in tool\"}}'\n");
  fs::permissions(experience_ / "tools" / "who.sh", fs::perms::owner_all, fs::perm_options::add);
  writeFile(experience_ / "prompts" / "ask.md", "Who answers?\n");
  const fs::path library = vendor(experience_, "claims_builtin");
  ASSERT_EQ(oe({"trust", experience_.string()}, {}).exit_code, 0);
  std::map<std::string, std::optional<std::string>> env;
  for (const auto& [name, value] : test::openAiServerEnv(server)) {
    env[name] = value;
  }

  // Without an override the built-in plugins keep both names, and every command says what to
  // write to change that.
  writeFile(experience_ / "experience.yaml", yaml(""));
  const ProcessResult kept = oe({"run", experience_.string(), "--json"}, {}, env);
  ASSERT_EQ(kept.exit_code, 0) << kept.describe();
  const json kept_state = json::parse(kept.out)["final_state"];
  EXPECT_EQ(kept_state["who"], "the built-in tool") << kept.out;
  EXPECT_FALSE(kept_state.contains("echo")) << kept.out;
  EXPECT_EQ(kept_state["answer"], "from the server") << kept.out;
  EXPECT_EQ(server.requestCount(), 1u);
  for (const std::string& name :
       {std::string("kind \"tool\""), std::string("LLM provider \"openai\"")}) {
    EXPECT_NE(
        kept.err.find(library.string() + ": " + name + " is provided by the built-in plugin "),
        std::string::npos)
        << kept.describe();
  }
  EXPECT_NE(kept.err.find("write `plugins: { override: [tool] }` in the experience"),
            std::string::npos)
      << kept.describe();
  EXPECT_NE(kept.err.find("write `plugins: { override: [openai] }` in the experience"),
            std::string::npos)
      << kept.describe();
  const ProcessResult listed = oe({"plugins", "--experience", experience_.string()}, {});
  EXPECT_NE(
      listed.out.find("kinds: tool (shadowed)  llm providers: openai (shadowed)  [trusted]  " +
                      library.string()),
      std::string::npos)
      << listed.describe();
  const ProcessResult doctor = oe({"doctor", "--json", "--experience", experience_.string()}, {});
  const json vendored = json::parse(doctor.out)["plugin_dirs"][0]["plugins"][0];
  EXPECT_EQ(vendored["shadowed"], json::array({"tool"})) << vendored;
  EXPECT_EQ(vendored["shadowed_llm_providers"], json::array({"openai"})) << vendored;

  // With the override, the experience's plugin serves both. (A copy of the folder: the first
  // run's state and cache stay behind.)
  const fs::path first = experience_;
  experience_ = fs::canonical(dir_.path()) / "flow-overriding";
  fs::copy(first, experience_, fs::copy_options::recursive);
  fs::remove_all(experience_ / ".openexpertise");
  ASSERT_EQ(oe({"trust", experience_.string()}, {}).exit_code, 0);
  const fs::path overriding = experience_ / "plugins" / library.filename();
  writeFile(experience_ / "experience.yaml", yaml("plugins: { override: [tool, openai] }\n"));
  const ProcessResult taken = oe({"run", experience_.string(), "--json"}, {}, env);
  ASSERT_EQ(taken.exit_code, 0) << taken.describe();
  const json taken_state = json::parse(taken.out)["final_state"];
  EXPECT_FALSE(taken_state.contains("who")) << taken.out;
  EXPECT_TRUE(taken_state.contains("echo")) << taken.out;
  EXPECT_EQ(taken_state["answer"], "from the vendored provider") << taken.out;
  EXPECT_EQ(server.requestCount(), 1u) << "the built-in provider was not asked again";
  EXPECT_EQ(taken.err.find("is provided by the built-in plugin"), std::string::npos)
      << taken.describe();
  // Again, from the spec snapshot the first run wrote (no YAML parse): the same override holds.
  ASSERT_TRUE(fs::exists(experience_ / ".openexpertise" / "experience.yaml.spec-snapshot"));
  const ProcessResult again = oe({"run", experience_.string(), "--json", "--no-cache"}, {}, env);
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  const json again_state = json::parse(again.out)["final_state"];
  EXPECT_FALSE(again_state.contains("who")) << again.out;
  EXPECT_EQ(again_state["answer"], "from the vendored provider") << again.out;
  EXPECT_EQ(server.requestCount(), 1u);
  // And with the plugin in a helper process (docs/trust.md, "Process isolation"): the agent in
  // oe calls the provider's table, whose complete runs in the helper.
  auto isolated_env = env;
  isolated_env["OE_PLUGIN_ISOLATION"] = "process";
  const ProcessResult isolated =
      oe({"run", experience_.string(), "--json", "--no-cache"}, {}, isolated_env);
  ASSERT_EQ(isolated.exit_code, 0) << isolated.describe();
  const json isolated_state = json::parse(isolated.out)["final_state"];
  EXPECT_EQ(isolated_state["answer"], "from the vendored provider") << isolated.out;
  EXPECT_TRUE(isolated_state.contains("echo")) << isolated.out;
  EXPECT_EQ(server.requestCount(), 1u);
  EXPECT_EQ(isolated.err.find("not served under isolation"), std::string::npos)
      << isolated.describe();
  const ProcessResult overridden = oe({"plugins", "--experience", experience_.string()}, {});
  EXPECT_NE(
      overridden.out.find("kinds: tool  llm providers: openai  [trusted]  " + overriding.string()),
      std::string::npos)
      << overridden.describe();

  // An override of a name no built-in plugin has is a warning of `oe validate`.
  writeFile(experience_ / "experience.yaml", yaml("plugins: { override: [tool, nothing-here] }\n"));
  const ProcessResult validate = oe({"validate", experience_.string()}, {});
  EXPECT_EQ(validate.exit_code, 0) << validate.describe();
  EXPECT_NE(validate.err.find("plugins.override[1]: no built-in plugin provides a kind or LLM "
                              "provider \"nothing-here\""),
            std::string::npos)
      << validate.describe();
}

TEST_F(Trust, ConcurrentTrustCallsLeaveAWholeStoreWithEveryRecord) {
  constexpr int kLibraries = 8;
  const fs::path libraries = fs::canonical(dir_.path()) / "libs";
  fs::create_directories(libraries);
  for (int i = 0; i < kLibraries; ++i) {
    fs::copy_file(fixtureFile("good", "good.so"), libraries / ("g" + std::to_string(i) + ".so"));
  }
  std::vector<ProcessResult> results(kLibraries);
  std::vector<std::thread> callers;
  for (int i = 0; i < kLibraries; ++i) {
    callers.emplace_back([&, i] {
      results[i] = oe({"trust", (libraries / ("g" + std::to_string(i) + ".so")).string()}, {});
    });
  }
  for (auto& caller : callers) {
    caller.join();
  }
  for (const ProcessResult& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.describe();
  }
  const json store = json::parse(readAll(trustFile()), nullptr, false);
  ASSERT_TRUE(store.is_object()) << readAll(trustFile());
  ASSERT_EQ(store["trusted"].size(), size_t{kLibraries}) << store.dump(2);
  std::set<std::string> paths;
  for (const json& record : store["trusted"]) {
    paths.insert(record["path"].get<std::string>());
  }
  EXPECT_EQ(paths.size(), size_t{kLibraries});
  for (const auto& entry : fs::directory_iterator(trustFile().parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << "a temporary file was left: " << entry.path();
  }
}

}  // namespace
}  // namespace oe::abi_test
