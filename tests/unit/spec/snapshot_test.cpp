// Spec snapshots: a saved experience comes back equal for the same YAML text, oe version and
// validation context, and never for anything else (a changed byte, other kinds, a torn file).
#include "oe/spec/snapshot.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "spec_test_support.hpp"

namespace oe::spec::testing {
namespace {

constexpr const char* kYaml = R"(name: snap
version: 0.1.0
state:
  schema:
    zeta: { type: number }
    alpha: { type: string, merge: set_once }
    mid: { type: array, merge: array_append }
graph:
  nodes:
    - { id: a, kind: tool, impl: ./t.mjs, args: { x: "$.zeta", y: 2 }, writes: [zeta] }
    - id: b
      kind: tool
      impl: ./t.mjs
      reads: [zeta]
      for_each: { source: $.mid, concurrency: 2 }
      on_error: { policy: retry, attempts: 3, backoff: exponential, base_ms: 5 }
  edges:
    - { from: a, to: b, when: "$.zeta > 1" }
runtime: { concurrency: 2 }
)";

class Snapshot : public ::testing::Test {
 protected:
  void SetUp() override { yaml_path_ = dir_.write("experience.yaml", kYaml); }

  Experience loaded() {
    LoadResult r = loadExperienceText(kYaml, yaml_path_);
    EXPECT_TRUE(r.experience.has_value());
    EXPECT_TRUE(r.diagnostics.empty());
    return std::move(*r.experience);
  }

  TempDir dir_;
  std::filesystem::path yaml_path_;
  const std::string context_ = snapshotContext(testKinds(), false);
};

TEST_F(Snapshot, ComesBackAsTheLoadedModel) {
  const Experience original = loaded();
  ASSERT_TRUE(writeSnapshot(original, kYaml, context_));
  auto back = readSnapshot(yaml_path_, kYaml, context_);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, "snap");
  EXPECT_EQ(back->file, original.file);
  EXPECT_EQ(back->raw["runtime"], original.raw["runtime"]);
  ASSERT_EQ(back->state.fields.size(), 3u);
  // Declaration order, not the JSON object's sorted order.
  EXPECT_EQ(back->state.fields[0].name, "zeta");
  EXPECT_EQ(back->state.fields[1].name, "alpha");
  EXPECT_EQ(back->state.fields[2].name, "mid");
  EXPECT_EQ(back->state.fields[1].merge, MergeStrategy::kSetOnce);
  EXPECT_EQ(back->state.index.at("mid"), 2u);
  ASSERT_EQ(back->nodes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->nodes[i].id, original.nodes[i].id);
    EXPECT_EQ(Json::parse(back->nodes[i].text), original.nodes[i].raw);  // kept as text only
    EXPECT_TRUE(back->nodes[i].raw.is_null());
    EXPECT_EQ(back->nodes[i].args, original.nodes[i].args);
  }
  EXPECT_EQ(back->nodes[1].on_error.attempts, 3);
  EXPECT_EQ(back->nodes[1].for_each->concurrency, 2);
  ASSERT_EQ(back->edges.size(), 1u);
  EXPECT_EQ(back->edges[0].when, "$.zeta > 1");
  EXPECT_EQ(back->runtime.concurrency, 2);
  EXPECT_EQ(back->findNode("b"), &back->nodes[1]);
}

TEST_F(Snapshot, IsIgnoredWhenTheYamlOrTheContextDiffers) {
  ASSERT_TRUE(writeSnapshot(loaded(), kYaml, context_));
  std::string edited = kYaml;
  edited[edited.find("y: 2")] = 'z';  // one byte
  EXPECT_FALSE(readSnapshot(yaml_path_, edited, context_));
  EXPECT_FALSE(readSnapshot(yaml_path_, std::string(kYaml) + "\n", context_));
  EXPECT_FALSE(readSnapshot(yaml_path_, kYaml, snapshotContext(testKinds(), true)));
  KindCatalog fewer = testKinds();
  fewer.erase("agent");
  EXPECT_FALSE(readSnapshot(yaml_path_, kYaml, snapshotContext(fewer, false)));
  EXPECT_TRUE(readSnapshot(yaml_path_, kYaml, context_));
}

TEST_F(Snapshot, ATornOrForeignFileIsAMiss) {
  EXPECT_FALSE(readSnapshot(yaml_path_, kYaml, context_));  // none yet
  ASSERT_TRUE(writeSnapshot(loaded(), kYaml, context_));
  const auto path = snapshotPath(yaml_path_);
  std::string whole;
  {
    std::ifstream in(path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t keep : {size_t{0}, size_t{10}, whole.size() / 2, whole.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, keep);
    EXPECT_FALSE(readSnapshot(yaml_path_, kYaml, context_)) << keep;
  }
  std::string other_version = whole;
  other_version.replace(other_version.find('\n') + 1, 1, "9");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << other_version;
  EXPECT_FALSE(readSnapshot(yaml_path_, kYaml, context_));
}

TEST_F(Snapshot, LivesUnderOpenexpertiseNamedAfterTheFile) {
  EXPECT_EQ(snapshotPath(yaml_path_),
            yaml_path_.parent_path() / ".openexpertise" / "experience.yaml.spec-snapshot");
}

}  // namespace
}  // namespace oe::spec::testing
