// `oe doctor` through the binary, with stand-in programs first on PATH: an old `node` fails,
// CLIs that hang are warned about once their deadline passes, a folder where .openexpertise/
// cannot be written fails, a plugin without a manifest fails naming the command that writes one,
// and the plugin folders are shown as a run would use them (built-in kinds kept unless
// overridden).
#include <unistd.h>

#include <regex>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using nlohmann::json;

class DoctorCli : public OeTest {
 protected:
  // A folder of stand-in programs: `node` printing `node_version`, and the three coding CLIs,
  // each either printing a version or hanging (`sleep` until killed).
  std::string fakeBin(const std::string& node_version, bool clis_hang) {
    const std::string body =
        clis_hang ? "exec /bin/sleep 600\n" : "echo \"$(basename $0) 1.2.3\"\n";
    writeExecutable("bin/node", "#!/bin/sh\necho " + node_version + "\n");
    for (const char* cli : {"claude", "codex", "gemini"}) {
      writeExecutable(std::string("bin/") + cli, "#!/bin/sh\n" + body);
    }
    return (dir_.path() / "bin").string() + ":/usr/bin:/bin";
  }

  ProcessResult doctor(const std::string& path, std::vector<std::string> extra = {},
                       std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"doctor", "--experience", (dir_.path() / "exp").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    env.emplace("PATH", path);
    env.emplace("ANTHROPIC_API_KEY", "");
    env.emplace("OPENAI_API_KEY", "");
    env.emplace("OPENAI_BASE_URL", "");
    std::filesystem::create_directories(dir_.path() / "exp");
    return oe(args, env);
  }

  static const json& check(const json& report, const std::string& name) {
    for (const json& c : report["checks"]) {
      if (c["name"] == name) {
        return c;
      }
    }
    ADD_FAILURE() << "no check " << name << " in " << report.dump(2);
    static const json kNone = json::object();
    return kNone;
  }
};

TEST_F(DoctorCli, JsonShapeAndAllPassing) {
  auto r = doctor(fakeBin("v22.3.0", false), {"--json"}, {{"OPENAI_API_KEY", "sk-secret-value"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  ASSERT_TRUE(report["checks"].is_array());
  int counts[3] = {0, 0, 0};
  for (const json& c : report["checks"]) {
    ASSERT_TRUE(c["name"].is_string() && c["detail"].is_string()) << c.dump();
    const std::string status = c["status"].get<std::string>();
    ASSERT_TRUE(status == "pass" || status == "warn" || status == "fail") << status;
    ++counts[status == "pass" ? 0 : status == "warn" ? 1 : 2];
  }
  EXPECT_EQ(report["summary"],
            (json{{"passed", counts[0]}, {"warned", counts[1]}, {"failed", counts[2]}}));
  EXPECT_EQ(counts[2], 0) << r.out;
  EXPECT_EQ(check(report, "Node.js >= 20")["status"], "pass");
  EXPECT_NE(check(report, "Node.js >= 20")["detail"].get<std::string>().find("v22.3.0"),
            std::string::npos);
  for (const char* cli : {"claude", "codex", "gemini"}) {
    EXPECT_EQ(check(report, cli)["status"], "pass") << cli;
    EXPECT_NE(check(report, cli)["detail"].get<std::string>().find("1.2.3"), std::string::npos);
  }
  EXPECT_EQ(check(report, "LLM provider")["status"], "pass");
  EXPECT_EQ(r.out.find("sk-secret-value"), std::string::npos);  // names only, never a key
  EXPECT_EQ(check(report, ".openexpertise/ writable")["status"], "pass");
  // The plugins of this build all load (tool at least).
  EXPECT_EQ(check(report, "plugin dev.oe.tool")["status"], "pass");
}

TEST_F(DoctorCli, AnOldNodeFailsAndSaysOnlyJsToolsNeedIt) {
  auto r = doctor(fakeBin("v18.19.0", false));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\xE2\x9C\x97 Node.js >= 20: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v18.19.0, older than 20; only .mjs/.js tools need it"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\xE2\x9C\x93 claude: claude 1.2.3"), std::string::npos) << r.out;
  // Upstream's summary line, with the counts of the lines above it.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex("\nSummary: (\\d+) passed \xC2\xB7 (\\d+) warnings \xC2\xB7 (\\d+) failures\n$")))
      << r.out;
  EXPECT_EQ(std::stoi(m[3]), 1);
  EXPECT_NE(r.out.find("\xE2\x9A\xA0 LLM provider: "), std::string::npos) << r.out;
}

TEST_F(DoctorCli, MissingNodeFails) {
  fakeBin("v22.3.0", false);
  std::filesystem::remove(dir_.path() / "bin" / "node");
  // Only the stand-ins' folder: no real node either.
  auto r = doctor((dir_.path() / "bin").string(), {"--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json report = json::parse(r.out);
  EXPECT_EQ(check(report, "Node.js >= 20")["status"], "fail");
  EXPECT_NE(check(report, "Node.js >= 20")["detail"].get<std::string>().find("not on PATH"),
            std::string::npos);
}

TEST_F(DoctorCli, HangingClisAreWarnedAboutAfterTheDeadline) {
  auto r = doctor(fakeBin("v20.0.0", true), {"--json", "--timeout-ms", "300"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  for (const char* cli : {"claude", "codex", "gemini"}) {
    EXPECT_EQ(check(report, cli)["status"], "warn") << cli;
    EXPECT_NE(check(report, cli)["detail"].get<std::string>().find("did not answer within 300 ms"),
              std::string::npos)
        << check(report, cli).dump();
  }
}

TEST_F(DoctorCli, MissingClisWarn) {
  fakeBin("v20.0.0", false);
  for (const char* cli : {"claude", "codex", "gemini"}) {
    std::filesystem::remove(dir_.path() / "bin" / cli);
  }
  auto r = doctor((dir_.path() / "bin").string(), {"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(check(report, "codex")["status"], "warn");
  EXPECT_NE(check(report, "codex")["detail"].get<std::string>().find("not on PATH"),
            std::string::npos);
}

TEST_F(DoctorCli, AReadOnlyFolderFails) {
  const std::string path = fakeBin("v20.0.0", false);
  std::filesystem::path folder = dir_.path() / "readonly";
  std::filesystem::create_directories(folder);
  std::filesystem::permissions(
      folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (geteuid() == 0) {
    folder = "/proc";  // root writes through permission bits; /proc takes no new file
  }
  auto r = oe({"doctor", "--json", "--experience", folder.string()}, {{"PATH", path}});
  std::filesystem::permissions(dir_.path() / "readonly", std::filesystem::perms::owner_all);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const json report = json::parse(r.out);
  EXPECT_EQ(check(report, ".openexpertise/ writable")["status"], "fail");
  EXPECT_NE(
      check(report, ".openexpertise/ writable")["detail"].get<std::string>().find("cannot create"),
      std::string::npos);
}

TEST_F(DoctorCli, StateFolderThatIsAFileFails) {
  dir_.write("exp/.openexpertise", "not a folder");
  auto r = doctor(fakeBin("v20.0.0", false), {"--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json report = json::parse(r.out);
  EXPECT_NE(check(report, ".openexpertise/ writable")["detail"].get<std::string>().find(
                "is not a folder"),
            std::string::npos);
}

// doctor loads no plugin that is not built in (docs/trust.md): one without a manifest fails,
// naming the command that writes one. (What the loader says of such a file: tests/abi.)
TEST_F(DoctorCli, APluginWithoutAManifestFailsNamingTheCommandThatWritesOne) {
  dir_.write("exp/plugins/broken.so", "this is not a shared library");
  auto r = doctor(fakeBin("v20.0.0", false), {"--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json report = json::parse(r.out);
  const json& broken = check(report, "plugin broken.so");
  EXPECT_EQ(broken["status"], "fail");
  const std::string detail = broken["detail"].get<std::string>();
  EXPECT_NE(detail.find("broken.so: no manifest"), std::string::npos) << detail;
  EXPECT_NE(detail.find("oe-plugin-manifest " +
                        std::filesystem::canonical(dir_.path() / "exp" / "plugins").string() +
                        "/broken.so"),
            std::string::npos)
      << detail;
}

TEST_F(DoctorCli, PluginFoldersAreListedInSearchOrderWithWhatEachHolds) {
  // The experience vendors a copy of the tool plugin, with its manifest (so it is described
  // without being loaded); the built-in one keeps the kind, as in a run, since the experience
  // says no plugins.override. OE_PLUGIN_PATH names a folder that is not there and one holding a
  // file that is not a plugin.
  std::filesystem::create_directories(dir_.path() / "exp" / "plugins");
  for (const char* file : {"tool.so", "tool.so.oe-manifest.json"}) {
    std::filesystem::copy_file(std::filesystem::path(OE_TEST_PLUGIN_DIR) / file,
                               dir_.path() / "exp" / "plugins" / file);
  }
  dir_.write("extra/broken.so", "this is not a shared library");
  const std::string missing = (dir_.path() / "nowhere").string();
  const std::string extra = (dir_.path() / "extra").string();
  const std::map<std::string, std::string> env = {{"OE_PLUGIN_PATH", missing + ":" + extra}};
  auto r = doctor(fakeBin("v20.0.0", false), {"--json"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out;  // the refused file fails its check
  const json dirs = json::parse(r.out)["plugin_dirs"];
  ASSERT_EQ(dirs.size(), 4u) << dirs.dump(2);

  EXPECT_EQ(dirs[0]["path"], (dir_.path() / "exp" / "plugins").string());
  EXPECT_EQ(dirs[0]["origin"], "the experience's plugins/");
  EXPECT_EQ(dirs[0]["state"], "searched");
  ASSERT_EQ(dirs[0]["plugins"].size(), 1u) << dirs[0].dump(2);
  EXPECT_EQ(dirs[0]["plugins"][0]["id"], "dev.oe.tool");
  EXPECT_EQ(dirs[0]["plugins"][0]["file"], "tool.so");
  EXPECT_EQ(dirs[0]["plugins"][0]["kinds"], json::array({"tool"}));
  EXPECT_EQ(dirs[0]["plugins"][0]["shadowed"], json::array({"tool"}));
  EXPECT_EQ(dirs[0]["plugins"][0]["built_in"], false);
  EXPECT_EQ(dirs[0]["plugins"][0]["trust"], "not trusted");
  EXPECT_FALSE(dirs[0]["plugins"][0]["version"].get<std::string>().empty());

  EXPECT_EQ(dirs[1]["path"], missing);
  EXPECT_EQ(dirs[1]["origin"], "OE_PLUGIN_PATH");
  EXPECT_EQ(dirs[1]["state"], "missing");

  EXPECT_EQ(dirs[2]["path"], extra);
  EXPECT_EQ(dirs[2]["state"], "searched");
  EXPECT_EQ(dirs[2]["plugins"], json::array());
  ASSERT_EQ(dirs[2]["refused"].size(), 1u) << dirs[2].dump(2);
  EXPECT_EQ(dirs[2]["refused"][0]["file"], "broken.so");

  // Last, the folder beside the oe binary: every built-in plugin, each keeping its kinds.
  EXPECT_EQ(std::filesystem::canonical(dirs[3]["path"].get<std::string>()),
            std::filesystem::canonical(OE_TEST_PLUGIN_DIR));
  EXPECT_EQ(dirs[3]["origin"], "beside this oe binary");
  bool saw_tool = false;
  for (const json& plugin : dirs[3]["plugins"]) {
    saw_tool = saw_tool || plugin["id"] == "dev.oe.tool";
    EXPECT_EQ(plugin["shadowed"], json::array()) << plugin.dump();
    EXPECT_EQ(plugin["built_in"], true) << plugin.dump();
    EXPECT_EQ(plugin["trust"], "built in") << plugin.dump();
  }
  EXPECT_TRUE(saw_tool) << dirs[3].dump(2);
  // The vendored copy is a warning that names the override that would make it serve the kind.
  bool warned = false;
  const json report = json::parse(r.out);
  for (const json& item : report["checks"]) {
    if (item["name"] == "plugin names") {
      warned = true;
      EXPECT_EQ(item["status"], "warn");
      EXPECT_NE(item["detail"].get<std::string>().find("plugins: { override: [tool] }"),
                std::string::npos)
          << item.dump();
    }
  }
  EXPECT_TRUE(warned) << r.out;

  // With the override, the vendored one serves the kind and the built-in one is shadowed.
  dir_.write("exp/experience.yaml", R"(name: vendors-tool
version: 0.1.0
plugins: { override: [tool] }
state: { schema: {} }
graph: { nodes: [{ id: t, kind: tool, impl: ./t.sh }], edges: [] }
)");
  const json overridden =
      json::parse(doctor(fakeBin("v20.0.0", false), {"--json"}, env).out)["plugin_dirs"];
  EXPECT_EQ(overridden[0]["plugins"][0]["shadowed"], json::array());
  for (const json& plugin : overridden[3]["plugins"]) {
    EXPECT_EQ(plugin["shadowed"],
              plugin["id"] == "dev.oe.tool" ? json::array({"tool"}) : json::array())
        << plugin.dump();
  }
  std::filesystem::remove(dir_.path() / "exp" / "experience.yaml");

  // The same in the text report, numbered in that order.
  auto text = doctor(fakeBin("v20.0.0", false), {}, env);
  const std::string& out = text.out;
  const size_t section = out.find("Plugin folders, in search order");
  ASSERT_NE(section, std::string::npos) << out;
  const size_t first = out.find("  1. " + (dir_.path() / "exp" / "plugins").string() +
                                    " (the experience's plugins/): 1 plugin\n",
                                section);
  const size_t second = out.find("  2. " + missing + " (OE_PLUGIN_PATH): not there\n", section);
  const size_t third =
      out.find("  3. " + extra + " (OE_PLUGIN_PATH): 0 plugins, 1 refused\n", section);
  const size_t fourth = out.find("  4. ", section);
  EXPECT_TRUE(first != std::string::npos && first < second && second < third && third < fourth)
      << out;
  EXPECT_NE(out.find("kinds: tool (shadowed)  [not trusted]  (tool.so)", first), std::string::npos)
      << out;
  EXPECT_LT(out.find("kinds: tool (shadowed)", first), second) << out;
  EXPECT_NE(out.find("dev.oe.tool ", fourth), std::string::npos) << out;
  EXPECT_NE(out.find("kinds: tool  [built in]  (tool.so)", fourth), std::string::npos) << out;
  EXPECT_NE(out.find("refused broken.so", third), std::string::npos) << out;
}

TEST_F(DoctorCli, AFolderListedTwiceIsSearchedOnce) {
  const std::map<std::string, std::string> env = {{"OE_PLUGIN_PATH", OE_TEST_PLUGIN_DIR}};
  auto r = doctor(fakeBin("v20.0.0", false), {"--json"}, env);
  const json dirs = json::parse(r.out)["plugin_dirs"];
  ASSERT_EQ(dirs.size(), 3u) << dirs.dump(2);
  EXPECT_EQ(dirs[1]["origin"], "OE_PLUGIN_PATH");
  EXPECT_EQ(dirs[1]["state"], "searched");
  EXPECT_FALSE(dirs[1]["plugins"].empty());
  EXPECT_EQ(dirs[2]["state"], "repeated");
  EXPECT_EQ(dirs[2]["plugins"], json::array());
}

}  // namespace
}  // namespace oe::test
