// Approvals in the spec (docs/policy.md, "Approvals"): `approval:` on a node and the approval
// gate kind read into ApprovalSpec, their timeouts parsed, and what validation refuses, each with
// its line and column.
#include "oe/spec/approval.hpp"

#include <gtest/gtest.h>

#include "oe/spec/validate.hpp"
#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::dump;
using testing::loadOk;
using testing::matching;
using testing::testKinds;

KindCatalog approvalKinds() {
  KindCatalog kinds = testKinds();
  kinds["approval"] = KindInfo{"approval", Json::parse(R"({"type": "object", "properties": {
      "prompt": {"type": "string"}, "show": {"type": "array", "items": {"type": "string"}},
      "timeout": {"type": "string"}, "on_timeout": {"enum": ["approve", "reject", "fail"]}}})")};
  return kinds;
}

std::string approvalExperience(const std::string& nodes, const std::string& extra = "") {
  return "name: t\nversion: 0.1.0\nstate:\n  schema:\n    draft: { type: string }\n"
         "    decision: { type: object }\n    other: { type: string }\ngraph:\n  nodes:\n" +
         nodes + "  edges: []\n" + extra;
}

std::vector<Diagnostic> validateApproval(const std::string& yaml) {
  Experience exp = loadOk(yaml);
  return validateExperience(exp, approvalKinds(), /*strict=*/false, /*check_files=*/false);
}

TEST(ApprovalTimeoutTest, ParsesDurations) {
  EXPECT_EQ(*parseApprovalTimeout("90s"), 90'000);
  EXPECT_EQ(*parseApprovalTimeout("30m"), 1'800'000);
  EXPECT_EQ(*parseApprovalTimeout("2h"), 7'200'000);
  EXPECT_EQ(*parseApprovalTimeout("7d"), 604'800'000);
  for (const char* bad : {"", "h", "0h", "-1h", "2", "2w", "1.5h", "h2", "99999999999999999d"}) {
    auto r = parseApprovalTimeout(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("e.g. 30m, 2h, 7d"), std::string::npos) << bad;
  }
}

TEST(ApprovalSpecTest, ReadsTheKeyAndTheGate) {
  Experience exp = loadOk(approvalExperience(
      "    - id: a\n      kind: tool\n      impl: a.mjs\n      approval:\n        prompt: Go?\n"
      "        show: [$.draft]\n        timeout: 2h\n        on_timeout: approve\n"
      "    - { id: b, kind: tool, impl: b.mjs, approval: true }\n"
      "    - { id: c, kind: tool, impl: c.mjs }\n"
      "    - { id: g, kind: approval, prompt: Ship it, writes: [decision] }\n"));
  ASSERT_EQ(exp.nodes.size(), 4u);
  ASSERT_TRUE(exp.nodes[0].approval);
  EXPECT_EQ(exp.nodes[0].approval->prompt, "Go?");
  EXPECT_EQ(exp.nodes[0].approval->show, std::vector<std::string>{"$.draft"});
  EXPECT_EQ(exp.nodes[0].approval->timeout_ms, 7'200'000);
  EXPECT_EQ(exp.nodes[0].approval->on_timeout, OnTimeout::kApprove);
  EXPECT_FALSE(exp.nodes[0].approval->gate);
  ASSERT_TRUE(exp.nodes[1].approval);
  EXPECT_FALSE(exp.nodes[1].approval->timeout_ms);
  EXPECT_EQ(exp.nodes[1].approval->on_timeout, OnTimeout::kFail);
  EXPECT_FALSE(exp.nodes[2].approval);
  ASSERT_TRUE(exp.nodes[3].approval);
  EXPECT_TRUE(exp.nodes[3].approval->gate);
  EXPECT_EQ(exp.nodes[3].approval->prompt, "Ship it");
}

TEST(ApprovalValidateTest, AcceptsAWellFormedApproval) {
  auto ds = validateApproval(approvalExperience(
      "    - id: a\n      kind: tool\n      impl: a.mjs\n      approval: { prompt: Go ahead, show: "
      "[$.draft], timeout: 30m, on_timeout: reject }\n"
      "    - { id: g, kind: approval, timeout: 1d, writes: [decision] }\n"));
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

TEST(ApprovalValidateTest, RefusesABadTimeoutWithItsPosition) {
  auto ds = validateApproval(approvalExperience(
      "    - id: a\n      kind: tool\n      impl: a.mjs\n      approval: { timeout: 0h }\n"));
  auto found = matching(ds, "is not a duration");
  ASSERT_EQ(found.size(), 1u) << dump(ds);
  EXPECT_EQ(found[0].line, 13);
  EXPECT_GT(found[0].column, 0);
  EXPECT_EQ(found[0].severity, Severity::kError);
}

TEST(ApprovalValidateTest, RefusesAMalformedApprovalThroughTheSchema) {
  LoadResult r = testing::load(approvalExperience(
      "    - id: a\n      kind: tool\n      impl: a.mjs\n      approval: { on_timeout: later, "
      "promt: x }\n"));
  const auto& ds = r.diagnostics;
  EXPECT_EQ(matching(ds, "must be one of: approve, reject, fail").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "unknown key \"promt\"; did you mean \"prompt\"").size(), 1u) << dump(ds);
  EXPECT_EQ(ds.size(), 2u) << dump(ds);
  for (const auto& d : ds) {
    EXPECT_EQ(d.line, 13) << dump(ds);
  }
}

TEST(ApprovalValidateTest, ShowNamesDeclaredFieldsAndWorktreeNodes) {
  auto ds = validateApproval(approvalExperience(
      "    - id: a\n      kind: tool\n      impl: a.mjs\n"
      "      approval: { show: [$.drafts, \"diff:a\", \"diff:nope\", plain] }\n"));
  EXPECT_EQ(matching(ds, "names state field \"drafts\"").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "has no `workspace: worktree`").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "names no node of the graph").size(), 1u) << dump(ds);
  EXPECT_EQ(matching(ds, "neither a state path").size(), 1u) << dump(ds);
}

// A pipeline stage or loop body asks per item or iteration (docs/policy.md, "Approvals"), the
// gate kind included; a gate still writes its decision to one field.
TEST(ApprovalValidateTest, AcceptsStagesAndLoopBodiesAndRefusesAGateWritingTwoFields) {
  auto ds = validateApproval(
      approvalExperience("    - { id: s, kind: tool, impl: s.mjs, approval: true }\n"
                         "    - { id: gs, kind: approval, writes: [decision] }\n"
                         "    - { id: b, kind: tool, impl: b.mjs, approval: { timeout: 1h } }\n"
                         "    - { id: g, kind: approval, writes: [decision, other] }\n",
                         "  pipelines:\n    - { id: p, items: $.draft, stages: [gs, s] }\n"
                         "  loops:\n    - { id: l, body: b, max_iters: 3 }\n"));
  EXPECT_TRUE(matching(ds, "pipeline stage or loop body").empty()) << dump(ds);
  EXPECT_TRUE(matching(ds, "main-pass").empty()) << dump(ds);
  const auto two = matching(ds, "writes its decision to one field");
  ASSERT_EQ(two.size(), 1u) << dump(ds);
  EXPECT_EQ(two[0].severity, Severity::kError);
  for (const auto& d : ds) {
    if (d.severity == Severity::kError) {
      EXPECT_NE(d.message.find("node \"g\""), std::string::npos) << dump(ds);
    }
  }
}

TEST(ApprovalValidateTest, WarnsOfOnTimeoutWithoutATimeout) {
  auto ds = validateApproval(approvalExperience(
      "    - { id: a, kind: tool, impl: a.mjs, approval: { on_timeout: approve } }\n"));
  auto found = matching(ds, "on_timeout applies only with a timeout");
  ASSERT_EQ(found.size(), 1u) << dump(ds);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
}

}  // namespace
}  // namespace oe::spec
