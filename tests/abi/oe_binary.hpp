// The real `oe` binary as the ABI suite runs it: OE_PLUGIN_PATH set to chosen fixture folders,
// HOME and the trust store (OE_TRUST_FILE) in a temp dir, so nothing from the developer's machine
// leaks in; plus what the tests read back (a line of `oe plugins`, a run's event log). A fixture
// is not built in: a test that runs one trusts its folder first (trust()), as a user would.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "abi/fixtures.hpp"
#include "abi/process.hpp"

namespace oe::abi_test {

inline const std::string kThisAbi = abiString(OE_ABI_VERSION_MAJOR, OE_ABI_VERSION_MINOR);

// The fixture folders, ':'-joined as OE_PLUGIN_PATH wants them.
inline std::string pluginPath(const std::vector<std::string>& cases) {
  std::string path;
  for (const std::string& name : cases) {
    path += (path.empty() ? "" : ":") + fixtureDir(name).string();
  }
  return path;
}

class OeBinary : public ::testing::Test {
 protected:
  // Runs `oe <args>` with the fixture folders `cases` as its plugin path; `env` adds to (or, with
  // std::nullopt, removes from) the environment.
  ProcessResult oe(const std::vector<std::string>& args, const std::vector<std::string>& cases,
                   const std::map<std::string, std::optional<std::string>>& env = {}) {
    std::vector<std::string> argv{OE_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions options;
    options.env = env;
    options.env["OE_PLUGIN_PATH"] = pluginPath(cases);
    options.env["HOME"] = home_.path().string();
    options.env["OE_TRUST_FILE"] = trustFile().string();
    options.cwd = home_.path();
    return runProcess(argv, options);
  }

  // `oe trust` of the fixture folders `cases` (every library in each) into this test's store.
  void trust(const std::vector<std::string>& cases) {
    std::vector<std::string> args{"trust"};
    for (const std::string& name : cases) {
      args.push_back(fixtureDir(name).string());
    }
    const ProcessResult r = oe(args, {});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }

  [[nodiscard]] std::filesystem::path trustFile() const { return home_.path() / "trust.json"; }

  static std::string canonical(const std::string& dir, const std::string& file) {
    return std::filesystem::canonical(fixtureFile(dir, file)).string();
  }

  TempDir home_;
};

// `<plugin_id>  <version>  abi <maj>.<min>  kinds: <k1,k2>  <path>`
inline std::regex listingLine(const std::string& id, const std::string& kinds,
                              const std::string& file) {
  const auto escape = [](const std::string& text) {
    return std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\-])"), R"(\$&)");
  };
  return std::regex("(^|\n)" + escape(id) + "  0\\.0\\.1  abi " + escape(kThisAbi) +
                    "  kinds: " + escape(kinds) + "  [^\n]*/" + escape(file) + "(\n|$)");
}

// An experience whose nodes write the request they were given to state `echo`, as the fixtures'
// kinds do: `nodes` and `edges` are the lines under graph.nodes and graph.edges (echoNode).
inline void writeEchoExperience(const std::filesystem::path& dir, const std::string& name,
                                const std::string& nodes, const std::string& edges) {
  writeFile(dir / "experience.yaml", "name: " + name +
                                         "\nversion: 0.1.0\nstate:\n  schema:\n    echo: { type: "
                                         "object }\ngraph:\n  nodes:\n" +
                                         nodes + "  edges:" + (edges.empty() ? " []\n" : "\n" + edges));
}

// One node of such an experience, with `text` as its one arg.
inline std::string echoNode(const std::string& id, const std::string& kind,
                            const std::string& text) {
  return "    - id: " + id + "\n      kind: " + kind + "\n      args: { text: \"" + text +
         "\" }\n      writes: [echo]\n";
}

// The events of the one run an experience folder has seen (its .openexpertise/runs/*.jsonl);
// empty, with a test failure, when there is not exactly one.
inline std::vector<nlohmann::json> onlyRunEvents(const std::filesystem::path& experience) {
  std::vector<std::filesystem::path> logs;
  const auto runs = experience / ".openexpertise" / "runs";
  if (std::filesystem::is_directory(runs)) {
    for (const auto& entry : std::filesystem::directory_iterator(runs)) {
      if (entry.path().extension() == ".jsonl") {
        logs.push_back(entry.path());
      }
    }
  }
  std::vector<nlohmann::json> events;
  if (logs.size() != 1) {
    ADD_FAILURE() << "expected one run log in " << runs << ", found " << logs.size();
    return events;
  }
  std::ifstream in(logs.front());
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      events.push_back(nlohmann::json::parse(line));
    }
  }
  return events;
}

}  // namespace oe::abi_test
