// OE_NODE_KIND_NOT_CACHEABLE (ABI 0.3) through the real `oe` binary: a kind that sets it loads,
// and its nodes run on every run, while a kind without it replays from the node cache.
#include "abi/oe_binary.hpp"

namespace oe::abi_test {
namespace {

void writeOneNode(const std::filesystem::path& dir, const std::string& kind) {
  writeFile(dir / "experience.yaml", R"(name: abi-kind-flags
version: 0.1.0
state: { schema: { echo: { type: object } } }
graph:
  nodes:
    - { id: say, kind: )" + kind + R"(, args: { text: same }, writes: [echo] }
  edges: []
)");
}

nlohmann::json nodesOf(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return nlohmann::json::parse(r.out, nullptr, false).value("nodes", nlohmann::json());
}

TEST_F(OeBinary, ANotCacheableKindRunsOnEveryRun) {
  trust({"not_cacheable", "good"});
  TempDir experience;
  writeOneNode(experience.path(), "abi-volatile");
  const std::vector<std::string> run = {"run", experience.path().string(), "--json"};
  EXPECT_EQ(nodesOf(oe(run, {"not_cacheable"}))["ran"], 1);
  const auto again = nodesOf(oe(run, {"not_cacheable"}));
  EXPECT_EQ(again["ran"], 1);
  EXPECT_EQ(again["cached"], 0);

  TempDir cached;
  writeOneNode(cached.path(), "abi-good");
  const std::vector<std::string> run_good = {"run", cached.path().string(), "--json"};
  EXPECT_EQ(nodesOf(oe(run_good, {"good"}))["ran"], 1);
  EXPECT_EQ(nodesOf(oe(run_good, {"good"}))["cached"], 1);
}

}  // namespace
}  // namespace oe::abi_test
