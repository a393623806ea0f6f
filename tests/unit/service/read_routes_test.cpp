// The read routes over real runs: experiences (list, one, validate, graph, schema), runs (list
// with filters and paging, one, a node, the report), run ids as prefixes, and every path a
// request names confined to --root, symlinks included.
#include "oe/service/read_routes.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <set>

#include "oe/plugins/manifest.hpp"
#include "oe/service/run_queue.hpp"

#include "unit/service/service_fixture.hpp"

namespace oe::service::test {
namespace {

namespace fs = std::filesystem;

class ReadRoutesTest : public ServiceTest {};

TEST_F(ReadRoutesTest, ListsAndDescribesTheExperiencesUnderTheRoot) {
  writeToolExperience(root() / "flows" / "greeter", "greeter");
  writeToolExperience(root() / "node_modules" / "hidden", "hidden");
  writeToolExperience(root() / ".openexpertise" / "installed", "installed");
  Json list = json("GET", "/api/experiences");
  ASSERT_TRUE(list.is_array()) << list.dump();
  ASSERT_EQ(list.size(), 1U) << list.dump();
  EXPECT_EQ(list[0]["name"], "greeter");
  EXPECT_EQ(list[0]["path"], "flows/greeter");
  EXPECT_EQ(list[0]["nodes"], 2);
  EXPECT_EQ(list[0]["description"], "greets and checks");

  Json one = json("GET", "/api/experiences/greeter");
  EXPECT_EQ(one["nodes"].size(), 2U);
  EXPECT_EQ(one["edges"][0]["from"], "greet");
  EXPECT_EQ(one["state_schema"]["properties"]["log"]["x-oe-merge"], "array_append");
  EXPECT_EQ(one["state_schema"]["properties"]["greeting"]["type"], "string");

  // The index parses a YAML again when it changed, and sees a new folder at once.
  const fs::path yaml = root() / "flows" / "greeter" / "experience.yaml";
  std::string text = oe::test::readFile(yaml);
  text.replace(text.find("greets and checks"), 17, "greets, checks and more");
  writeText(yaml, text);
  writeToolExperience(root() / "flows" / "second", "second");
  Json again = json("GET", "/api/experiences");
  ASSERT_EQ(again.size(), 2U) << again.dump();
  EXPECT_EQ(again[0]["description"], "greets, checks and more");
  EXPECT_EQ(again[1]["name"], "second");

  const auto missing = call("GET", "/api/experiences/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.content_type, "application/problem+json");
  EXPECT_NE(missing.body.find("GET /api/experiences lists them"), std::string::npos);
}

TEST_F(ReadRoutesTest, TwoExperiencesOfOneNameAreAConflictThatSaysWhichFiles) {
  writeToolExperience(root() / "a", "same");
  writeToolExperience(root() / "b", "same");
  const auto response = call("GET", "/api/experiences/same");
  EXPECT_EQ(response.status, 409);
  EXPECT_NE(response.body.find("/a/experience.yaml"), std::string::npos) << response.body;
  EXPECT_NE(response.body.find("/b/experience.yaml"), std::string::npos) << response.body;
}

TEST_F(ReadRoutesTest, ValidateGraphAndSchema) {
  writeToolExperience(root() / "greeter", "greeter");
  Json valid = json("POST", "/api/experiences/greeter/validate");
  EXPECT_EQ(valid["valid"], true) << valid.dump();
  EXPECT_TRUE(valid["errors"].empty());

  // An unknown kind is oe validate's error, with its line.
  fs::create_directories(root() / "broken");
  writeText(root() / "broken" / "experience.yaml",
            "name: broken\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n"
            "  nodes:\n    - { id: a, kind: no-such-kind }\n  edges: []\n");
  Json invalid = json("POST", "/api/experiences/broken/validate", 200, R"({"strict":false})");
  EXPECT_EQ(invalid["valid"], false);
  ASSERT_FALSE(invalid["errors"].empty()) << invalid.dump();
  EXPECT_EQ(invalid["errors"][0]["line"], 7) << invalid.dump();
  EXPECT_EQ(call("POST", "/api/experiences/broken/validate", "[1]").status, 400);
  EXPECT_EQ(call("GET", "/api/experiences/broken/graph").status, 422);

  Json graph = json("GET", "/api/experiences/greeter/graph?direction=LR");
  EXPECT_EQ(graph["nodes"].size(), 2U);
  EXPECT_EQ(graph["edges"][0]["to"], "check");
  EXPECT_NE(graph["svg"].get<std::string>().find("<svg"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/experiences/greeter/graph?direction=up").status, 400);

  run(root() / "greeter", R"({"who":"bob"})");
  Json schema = json("GET", "/api/experiences/greeter/schema");
  EXPECT_EQ(schema["state"]["type"], "object");
  EXPECT_EQ(schema["state"]["additionalProperties"], false);
  EXPECT_EQ(schema["args"]["examples"][0]["who"], "bob") << schema.dump();
}

// An experience that brings its own plugin: validate, graph, schema and the experience itself
// describe it from its manifest and never map the library (docs/trust.md), trusted or not.
TEST_F(ReadRoutesTest, AnExperiencesOwnPluginIsDescribedNeverLoaded) {
  const fs::path dir = root() / "vendored";
  fs::create_directories(dir / "plugins");
  const fs::path library = fs::canonical(dir / "plugins") / "counting.so";
  fs::copy_file(OE_COUNTING_FIXTURE, library);
  fs::copy_file(plugins::manifestPath(OE_COUNTING_FIXTURE), plugins::manifestPath(library));
  writeText(dir / "experience.yaml",
            "name: vendored\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n  nodes:\n"
            "    - { id: a, kind: abi-good }\n  edges: []\n");
  Json valid = json("POST", "/api/experiences/vendored/validate");
  EXPECT_EQ(valid["valid"], true) << valid.dump();
  EXPECT_EQ(call("GET", "/api/experiences/vendored/graph").status, 200);
  EXPECT_EQ(call("GET", "/api/experiences/vendored/schema").status, 200);
  EXPECT_EQ(call("GET", "/api/experiences/vendored").status, 200);
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(handle, nullptr) << "the server mapped " << library;
  if (handle != nullptr) {
    ::dlclose(handle);
  }
}

TEST_F(ReadRoutesTest, RunsListFiltersPagesAndPutsQueuedRunsFirst) {
  const fs::path greeter = root() / "greeter";
  const fs::path other = root() / "other";
  writeToolExperience(greeter, "greeter");
  writeToolExperience(other, "other");
  const std::string ok = run(greeter, R"({"who":"bob"})");
  const std::string bad = run(greeter, R"({"fail":true})");
  const std::string third = run(other);
  ASSERT_FALSE(ok.empty() || bad.empty() || third.empty());
  buildRouter({}, [] {
    return std::vector<QueueEntry>{{"queued-1", "greeter", "queued", 7, "2026-01-01T00:00:00Z"}};
  });

  Json all = json("GET", "/api/runs");
  ASSERT_EQ(all["runs"].size(), 4U) << all.dump();
  EXPECT_EQ(all["runs"][0]["id"], "queued-1");
  EXPECT_EQ(all["runs"][0]["status"], "queued");
  EXPECT_EQ(all["runs"][0]["priority"], 7);
  EXPECT_FALSE(all.contains("next_cursor"));
  std::map<std::string, Json> by_id;
  for (const auto& r : all["runs"]) {
    by_id[r["id"]] = r;
  }
  EXPECT_EQ(by_id[ok]["status"], "succeeded");
  EXPECT_EQ(by_id[ok]["usage"]["tokens_in"], 7);
  EXPECT_EQ(by_id[ok]["usage"]["tokens_out"], 3);
  EXPECT_EQ(by_id[bad]["status"], "failed");
  EXPECT_EQ(by_id[third]["experience"], "other");

  Json failed = json("GET", "/api/runs?status=failed");
  ASSERT_EQ(failed["runs"].size(), 1U);
  EXPECT_EQ(failed["runs"][0]["id"], bad);
  Json others = json("GET", "/api/runs?experience=other");
  ASSERT_EQ(others["runs"].size(), 1U);
  EXPECT_EQ(others["runs"][0]["id"], third);

  // Pages of one, each cursor the last id of the page before: every run once, in order.
  std::vector<std::string> paged;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    Json body = json("GET", "/api/runs?limit=1" + (cursor.empty() ? "" : "&cursor=" + cursor));
    ASSERT_EQ(body["runs"].size(), 1U) << body.dump();
    paged.push_back(body["runs"][0]["id"]);
    if (!body.contains("next_cursor")) {
      break;
    }
    cursor = body["next_cursor"];
  }
  std::vector<std::string> listed;
  for (const auto& r : all["runs"]) {
    listed.push_back(r["id"]);
  }
  EXPECT_EQ(paged, listed);

  // A queued run has no log yet, and is still a run.
  Json queued = json("GET", "/api/runs/queued-1");
  EXPECT_EQ(queued["status"], "queued");
  EXPECT_TRUE(queued["timeline"].empty());

  EXPECT_EQ(call("GET", "/api/runs?limit=0").status, 400);
  EXPECT_EQ(call("GET", "/api/runs?limit=501").status, 400);
  EXPECT_EQ(call("GET", "/api/runs?status=done").status, 400);
  EXPECT_EQ(call("GET", "/api/runs?cursor=gone").status, 400);
}

// A queued run cancelled before it started has no log and is still listed: among the finished
// runs by when it was cancelled (not at the top with the queued ones), under status=cancelled,
// and GET answers its entry.
TEST_F(ReadRoutesTest, ARunCancelledWhileQueuedIsListedAmongTheFinishedByItsCancelTime) {
  const fs::path greeter = root() / "greeter";
  writeToolExperience(greeter, "greeter");
  const std::string older = run(greeter);
  const int64_t between = nowMs();
  const std::string newer = run(greeter);
  ASSERT_FALSE(older.empty() || newer.empty());
  buildRouter({}, [between] {
    return std::vector<QueueEntry>{
        {"queued-1", "greeter", "queued", 5, "2026-01-01T00:00:00Z", 0},
        {"cancelled-now", "greeter", "cancelled", 5, "2026-01-01T00:00:00Z", between},
        {"cancelled-long-ago", "greeter", "cancelled", 5, "1970-01-01T00:00:00Z", 1500}};
  });

  Json all = json("GET", "/api/runs");
  std::vector<std::string> ids;
  for (const auto& r : all["runs"]) {
    ids.push_back(r["id"]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"queued-1", newer, "cancelled-now", older,
                                           "cancelled-long-ago"}))
      << all.dump();

  Json cancelled = json("GET", "/api/runs?status=cancelled");
  ASSERT_EQ(cancelled["runs"].size(), 2U) << cancelled.dump();
  EXPECT_EQ(cancelled["runs"][0]["id"], "cancelled-now");
  EXPECT_EQ(cancelled["runs"][1]["id"], "cancelled-long-ago");
  EXPECT_EQ(cancelled["runs"][1]["finished_at"], "1970-01-01T00:00:01.500Z");
  EXPECT_EQ(cancelled["runs"][1]["started_at"], nullptr);

  Json one = json("GET", "/api/runs/cancelled-long-ago");
  EXPECT_EQ(one["status"], "cancelled");
  EXPECT_EQ(one["finished_at"], "1970-01-01T00:00:01.500Z");
  EXPECT_EQ(one["reason"], "cancelled before it started");
  EXPECT_TRUE(one["timeline"].empty());
}

// A run a later run resumed is no longer the one to act on: `resumed`, naming the later run,
// so that status=failed (or waiting, interrupted) lists only what nobody took up yet.
TEST_F(ReadRoutesTest, ARunThatALaterRunResumedIsResumedAndNamesIt) {
  const fs::path greeter = root() / "greeter";
  writeToolExperience(greeter, "greeter");
  const std::string bad = run(greeter, R"({"fail":true})");
  ASSERT_FALSE(bad.empty());
  buildRouter();
  EXPECT_EQ(json("GET", "/api/runs/" + bad)["status"], "failed");
  ASSERT_EQ(json("GET", "/api/runs?status=failed")["runs"].size(), 1U);

  writeText(greeter / "check.sh", "#!/bin/sh\ncat > /dev/null\necho '{\"state_delta\":{}}'\n");
  const auto resumed = oe({"resume", bad, "--experience", greeter.string(), "--json"});
  const Json summary = Json::parse(resumed.out, nullptr, false);
  ASSERT_TRUE(summary.is_object() && summary.contains("run_id")) << resumed.out << resumed.err;
  const std::string next = summary["run_id"];

  const Json first = json("GET", "/api/runs/" + bad);
  EXPECT_EQ(first["status"], "resumed");
  EXPECT_EQ(first["engine_status"], "failed") << "the engine's word stays";
  EXPECT_EQ(first["resumed_by"], next);
  EXPECT_TRUE(json("GET", "/api/runs/" + next)["resumed_by"].is_null());
  EXPECT_TRUE(json("GET", "/api/runs?status=failed")["runs"].empty());
  const Json listed = json("GET", "/api/runs?status=resumed");
  ASSERT_EQ(listed["runs"].size(), 1U) << listed.dump();
  EXPECT_EQ(listed["runs"][0]["resumed_by"], next);
  const Json succeeded = json("GET", "/api/runs?status=succeeded");
  ASSERT_EQ(succeeded["runs"].size(), 1U) << succeeded.dump();
  EXPECT_EQ(succeeded["runs"][0]["resumed_from"], bad);
  EXPECT_EQ(call("GET", "/api/runs?status=partial").status, 200) << "partial is a status too";
}

TEST_F(ReadRoutesTest, OneRunByPrefixWithItsTimelineNodeDetailAndReport) {
  const fs::path greeter = root() / "greeter";
  writeToolExperience(greeter, "greeter");
  const std::string id = run(greeter, R"({"who":"bob","fail":true})");
  ASSERT_FALSE(id.empty());

  Json body = json("GET", "/api/runs/" + id.substr(0, 8));
  EXPECT_EQ(body["id"], id);
  EXPECT_EQ(body["experience"], "greeter");
  EXPECT_EQ(body["status"], "failed");
  EXPECT_EQ(body["args"]["who"], "bob");
  EXPECT_EQ(body["usage"]["cost_usd"], 0.25);
  EXPECT_EQ(body["counts"]["failed"], 1);
  ASSERT_EQ(body["timeline"].size(), 2U) << body.dump();
  EXPECT_EQ(body["timeline"][0]["id"], "greet");
  EXPECT_EQ(body["timeline"][0]["status"], "success");
  EXPECT_EQ(body["timeline"][1]["status"], "failed");
  EXPECT_FALSE(body["started_at"].is_null());
  EXPECT_FALSE(body["finished_at"].is_null());

  Json greet = json("GET", "/api/runs/" + id + "/nodes/greet");
  EXPECT_EQ(greet["status"], "success");
  EXPECT_EQ(greet["kind"], "tool");
  EXPECT_EQ(greet["output"]["said"], "bob") << greet.dump();
  EXPECT_EQ(greet["usage"]["tokens_in"], 7);
  ASSERT_EQ(greet["state_writes"].size(), 2U) << greet.dump();
  EXPECT_FALSE(greet["events"].empty());
  for (const auto& event : greet["events"]) {
    EXPECT_EQ(event["node_id"], "greet");
    EXPECT_GE(event["seq"].get<int>(), 2);
  }
  Json check = json("GET", "/api/runs/" + id + "/nodes/check");
  EXPECT_EQ(check["status"], "failed");
  EXPECT_EQ(check["inputs"]["edges"]["greet"]["said"], "bob") << check.dump();
  ASSERT_EQ(check["errors"].size(), 1U);
  EXPECT_NE(check["errors"][0].get<std::string>().find("failed on purpose"), std::string::npos)
      << check.dump();
  EXPECT_EQ(call("GET", "/api/runs/" + id + "/nodes/nope").status, 404);

  const auto report = call("GET", "/api/runs/" + id + "/report");
  EXPECT_EQ(report.status, 200);
  EXPECT_EQ(report.content_type, "text/html; charset=utf-8");
  EXPECT_NE(report.body.find(id), std::string::npos);
  EXPECT_NE(report.body.find("<svg"), std::string::npos);
}

TEST_F(ReadRoutesTest, RunIdsAreCheckedAndAmbiguousPrefixesNameTheCandidates) {
  const fs::path greeter = root() / "greeter";
  writeToolExperience(greeter, "greeter");
  run(greeter);
  // Two logs whose ids share a prefix, written by hand (run ids are random).
  const fs::path runs = greeter / ".openexpertise" / "runs";
  writeText(runs / "abc-1.jsonl",
            R"({"type":"run.started","run_id":"abc-1","ts":"2026-01-01T00:00:00.000Z","args":{}})"
            "\n");
  writeText(runs / "abc-2.jsonl",
            R"({"type":"run.started","run_id":"abc-2","ts":"2026-01-01T00:00:01.000Z","args":{}})"
            "\n");
  const auto ambiguous = call("GET", "/api/runs/abc");
  EXPECT_EQ(ambiguous.status, 409);
  EXPECT_NE(ambiguous.body.find("abc-1"), std::string::npos);
  EXPECT_NE(ambiguous.body.find("abc-2"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/runs/abc-2").status, 200);
  EXPECT_EQ(call("GET", "/api/runs/zzz").status, 404);
  for (const std::string bad : {"..", "a.b", "x%2F..", "%2e%2e"}) {
    EXPECT_EQ(call("GET", "/api/runs/" + bad).status, 400) << bad;
  }
  // An unfinished log that no process holds: interrupted.
  EXPECT_EQ(json("GET", "/api/runs/abc-1")["status"], "interrupted");
}

TEST_F(ReadRoutesTest, SymlinksOutOfTheRootAreNotServed) {
  // An experience outside the root, linked into it: as a folder and as its yaml file.
  const fs::path outside = dir_.path() / "outside";
  writeToolExperience(outside, "secret");
  run(outside);
  fs::create_directory_symlink(outside, root() / "linked-dir");
  fs::create_directories(root() / "linked-yaml");
  fs::create_symlink(outside / "experience.yaml", root() / "linked-yaml" / "experience.yaml");
  EXPECT_TRUE(json("GET", "/api/experiences").empty());
  EXPECT_EQ(call("GET", "/api/experiences/secret").status, 404);

  // A run log of an experience inside the root that links out.
  const fs::path inside = root() / "inside";
  writeToolExperience(inside, "inside");
  fs::create_directories(inside / ".openexpertise" / "runs");
  const fs::path outside_log = dir_.path() / "elsewhere.jsonl";
  writeText(outside_log,
            R"({"type":"run.started","run_id":"linked","ts":"2026-01-01T00:00:00.000Z","args":{}})"
            "\n");
  fs::create_symlink(outside_log, inside / ".openexpertise" / "runs" / "linked.jsonl");
  const auto refused = call("GET", "/api/runs/linked");
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.find("outside"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/runs/linked/events").status, 403);

  // A log inside the root whose node names a nested run log outside it: not served.
  const fs::path secret_log = dir_.path() / "secret.jsonl";
  writeText(
      secret_log,
      R"({"type":"run.started","run_id":"s","ts":"2026-01-01T00:00:00.000Z","args":{"password":"hunter2"}})"
      "\n"
      R"({"type":"node.failed","run_id":"s","node_id":"x","ts":"2026-01-01T00:00:00.050Z","error":"hunter2"})"
      "\n");
  writeText(
      inside / ".openexpertise" / "runs" / "nests.jsonl",
      R"({"type":"run.started","run_id":"nests","ts":"2026-01-01T00:00:00.000Z","args":{}})"
      "\n"
      R"({"type":"node.activity","run_id":"nests","node_id":"greet","ts":"2026-01-01T00:00:00.100Z","sub_event_log":")" +
          secret_log.string() + "\"}\n");
  const auto report = call("GET", "/api/runs/nests/report");
  EXPECT_EQ(report.status, 200);
  EXPECT_EQ(report.body.find("hunter2"), std::string::npos);
  Json node = json("GET", "/api/runs/nests/nodes/greet");
  EXPECT_EQ(node.dump().find("hunter2"), std::string::npos);
  EXPECT_NE(node["notes"].dump().find("is not served"), std::string::npos) << node.dump();
  EXPECT_EQ(call("GET", "/api/runs/linked/state").status, 403);
}

}  // namespace
}  // namespace oe::service::test
