// What a node's cache key covers, through the engine (docs/durability.md, "What the cache key
// covers"): the files its args name, its cache.inputs, `cache: false` and a kind flagged
// OE_NODE_KIND_NOT_CACHEABLE. Each change re-runs the nodes that depend on it and no other.
#include "engine_fixture.hpp"

namespace oe::run::engine::testing {
namespace {

// The fake kind again, flagged as not cacheable.
inline const oe_node_kind kVolatileKind = {sizeof(oe_node_kind),
                                           OE_NODE_KIND_NOT_CACHEABLE,
                                           "volatile",
                                           "fake, never cached",
                                           nullptr,
                                           fakeCreate,
                                           fakeDestroy,
                                           fakeInvoke,
                                           nullptr};

class RunCacheKey : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    kinds_["volatile"] = plugins::LoadedKind{nullptr, &kVolatileKind};
  }
  size_t calls(std::string_view node) { return callsOf(node).size(); }
};

constexpr std::string_view kArgsFile = R"(name: args-file
version: 0.1.0
state: { schema: { a: { type: number }, b: { type: number }, c: { type: number } } }
graph:
  nodes:
    - { id: reads_input, kind: fake, args: { path: ./input.txt, delta: { a: 1 } }, writes: [a] }
    - { id: reads_other, kind: fake, args: { files: [data/other.txt], delta: { b: 2 } }, writes: [b] }
    - { id: names_no_file, kind: fake, args: { path: ./nothing.txt, delta: { c: 3 } }, writes: [c] }
  edges: []
)";

TEST_F(RunCacheKey, EditingAFileNamedInArgsRerunsOnlyTheNodeNamingIt) {
  dir_.write("input.txt", "one two three");
  dir_.write("data/other.txt", "other");
  EXPECT_EQ(run(kArgsFile).ran, 3u);
  EXPECT_EQ(run(kArgsFile).cached, 3u);
  dir_.write("input.txt", "one two three four");
  const RunSummary after = run(kArgsFile);
  EXPECT_EQ(after.ran, 1u);
  EXPECT_EQ(after.cached, 2u);
  EXPECT_EQ(calls("reads_input"), 2u);
  EXPECT_EQ(calls("reads_other"), 1u);
  EXPECT_EQ(calls("names_no_file"), 1u);
  // A file in a list, at depth, counts the same; creating a named file that was missing too.
  dir_.write("data/other.txt", "changed");
  dir_.write("nothing.txt", "now there");
  EXPECT_EQ(run(kArgsFile).ran, 2u);
  EXPECT_EQ(calls("reads_input"), 2u);
  EXPECT_EQ(calls("reads_other"), 2u);
  EXPECT_EQ(calls("names_no_file"), 2u);
}

// A $.path arg resolved from the state names the file: the value the call sends counts. `use`
// and `other` read the same field; only `use` passes it as an arg. (`choose` names the file in
// its own args, so it runs again too, and writes the same value.)
constexpr std::string_view kResolvedArg = R"(name: resolved
version: 0.1.0
state: { schema: { where: { type: string }, n: { type: number }, m: { type: number } } }
graph:
  nodes:
    - { id: choose, kind: fake, args: { delta: { where: ./chosen.txt } }, writes: [where] }
    - { id: use, kind: fake, reads: [where], args: { path: $.where, delta: { n: 1 } }, writes: [n] }
    - { id: other, kind: fake, reads: [where], args: { delta: { m: 1 } }, writes: [m] }
  edges: [ { from: choose, to: use }, { from: choose, to: other } ]
)";

TEST_F(RunCacheKey, AFileAStatePathNamesCountsAsResolved) {
  dir_.write("chosen.txt", "v1");
  EXPECT_EQ(run(kResolvedArg).ran, 3u);
  EXPECT_EQ(run(kResolvedArg).cached, 3u);
  dir_.write("chosen.txt", "v2");
  const RunSummary after = run(kResolvedArg);
  EXPECT_EQ(after.ran, 2u);
  EXPECT_EQ(calls("choose"), 2u);
  EXPECT_EQ(calls("use"), 2u);
  EXPECT_EQ(calls("other"), 1u);
  EXPECT_EQ(callsOf("use")[1]["state_view"], callsOf("use")[0]["state_view"]);
}

constexpr std::string_view kInputs = R"(name: inputs
version: 0.1.0
state: { schema: { g: { type: number }, p: { type: number } } }
graph:
  nodes:
    - { id: globbed, kind: fake, cache: { inputs: ["data/**/*.csv"] }, args: { delta: { g: 1 } }, writes: [g] }
    - { id: plain, kind: fake, args: { delta: { p: 1 } }, writes: [p] }
  edges: []
)";

TEST_F(RunCacheKey, CacheInputsGlobsJoinTheKey) {
  dir_.write("data/a.csv", "1");
  EXPECT_EQ(run(kInputs).ran, 2u);
  EXPECT_EQ(run(kInputs).cached, 2u);
  dir_.write("data/deep/b.csv", "2");  // a new match
  EXPECT_EQ(run(kInputs).ran, 1u);
  dir_.write("data/a.csv", "changed");  // a changed match
  EXPECT_EQ(run(kInputs).ran, 1u);
  dir_.write("data/notes.txt", "not matched");
  EXPECT_EQ(run(kInputs).cached, 2u);
  std::filesystem::remove(dir_ / "data/deep/b.csv");  // a match gone
  EXPECT_EQ(run(kInputs).ran, 1u);
  EXPECT_EQ(calls("globbed"), 4u);
  EXPECT_EQ(calls("plain"), 1u);
}

constexpr std::string_view kNeverCached = R"(name: never
version: 0.1.0
state: { schema: { a: { type: number }, b: { type: number }, c: { type: number } } }
graph:
  nodes:
    - { id: off, kind: fake, cache: false, args: { delta: { a: 1 } }, writes: [a] }
    - { id: flagged, kind: volatile, args: { delta: { b: 1 } }, writes: [b] }
    - { id: cached, kind: fake, cache: true, args: { delta: { c: 1 } }, writes: [c] }
  edges: []
)";

TEST_F(RunCacheKey, CacheFalseAndANotCacheableKindAlwaysRun) {
  EXPECT_EQ(run(kNeverCached).ran, 3u);
  const RunSummary second = run(kNeverCached);
  EXPECT_EQ(second.ran, 2u);
  EXPECT_EQ(second.cached, 1u);
  EXPECT_EQ(calls("off"), 2u);
  EXPECT_EQ(calls("flagged"), 2u);
  EXPECT_EQ(calls("cached"), 1u);
  // Nothing was stored for them: the cache holds the one cacheable node's entry.
  auto cache = cache::CacheStore::open(dir_ / "cache");
  ASSERT_TRUE(cache);
  const auto entries = (*cache)->list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].node_id, "cached");
}

constexpr std::string_view kBigFolder = R"(name: big
version: 0.1.0
state: { schema: { a: { type: number } } }
graph:
  nodes:
    - { id: scan, kind: fake, args: { root: ./big, delta: { a: 1 } }, writes: [a] }
  edges: []
)";

TEST_F(RunCacheKey, AFolderTooLargeToHashRunsTheNodeWithoutTheCacheAndSaysSo) {
  for (size_t i = 0; i <= cache::DigestCache::kMaxFolderFiles; ++i) {
    dir_.write("big/f" + std::to_string(i), "");
  }
  EXPECT_EQ(run(kBigFolder).ran, 1u);
  const auto warnings = eventsOf("run.warning", "scan");
  ASSERT_EQ(warnings.size(), 1u);
  const std::string message = warnings[0]["message"];
  EXPECT_NE(message.find("runs without the cache"), std::string::npos) << message;
  EXPECT_NE(message.find("more than 10000 files"), std::string::npos) << message;
  EXPECT_EQ(run(kBigFolder).ran, 1u);
  EXPECT_EQ(calls("scan"), 2u);
}

}  // namespace
}  // namespace oe::run::engine::testing
