// Secrets that never leak (docs/policy.md, "Secrets"), end to end with the real `oe`: a run uses
// two secrets and a provider key in every way a user can (a tool's args, a coding CLI's env and
// inline prompt, an agent's prompt file), with a tool that prints its request, a tool that fails
// quoting the token, a CLI that echoes its environment and arguments and an LLM that repeats its
// prompt. Every file under .openexpertise/, the HTML report, the OTLP payload, the recording,
// what `oe` printed and every PostgreSQL table must hold none of the values, while the programs
// and the provider really got them.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "oe_fixture.hpp"
#include "support/fake_llm_server.hpp"
#include "support/pg_test_db.hpp"

namespace oe::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kToken = "tok-Secret-8271-zq";
// A quote and a backslash: its JSON-escaped forms differ from it.
constexpr std::string_view kFiled = "f1le-\"sec\"\\ret-77";
constexpr std::string_view kProviderKey = "sk-provider-key-7731";
// What is searched for: each value, and a fragment of each that any encoding of it that keeps
// ASCII letters would still show.
const std::vector<std::string> kNeedles = {std::string(kToken),
                                           std::string(kFiled),
                                           json(std::string(kFiled)).dump(),
                                           std::string(kProviderKey),
                                           "tok-Secret",
                                           "f1le-",
                                           "sk-provider"};

constexpr std::string_view kExperience = R"(name: secrets
version: 0.1.0
secrets:
  TOKEN: { env: SEC_TOKEN }
  FILED: { file: .secrets/filed }
state:
  schema:
    echo: { type: string }
    cli: { type: string }
    answer: { type: string }
    said: { type: string }
graph:
  nodes:
    - id: leak
      kind: tool
      impl: ./tools/leak.sh
      args: { token: "${secret:TOKEN}", header: "Bearer ${secret:FILED}" }
      writes: [echo]
    - id: fails
      kind: tool
      impl: ./tools/fails.sh
      args: { token: "${secret:TOKEN}" }
      on_error: { policy: skip }
    - id: cli
      kind: cli-agent
      provider: claude-code
      prompt: "use ${secret:FILED} with {{echo}}"
      env: { API_TOKEN: "${secret:TOKEN}" }
      reads: [echo]
      writes: [cli]
    - id: ask
      kind: agent
      prompt: prompts/ask.md
      args: { key: "${secret:FILED}" }
      writes: [answer]
    - id: nested
      kind: experience
      impl: ./child
      inputs: { subject: "${secret:TOKEN}" }
      outputs: { said: $.said }
      writes: [said]
  edges:
    - { from: leak, to: cli }
    - { from: leak, to: ask }
)";

class SecretsTest : public OeTest {
 protected:
  void SetUp() override {
    writeExperience(kExperience);
    // A nested experience gets the token as a run arg and its tool prints it.
    dir_.write("child/experience.yaml", R"(name: child
version: 0.1.0
state:
  schema:
    said: { type: string }
graph:
  nodes:
    - { id: say, kind: tool, impl: ./say.sh, writes: [said] }
  edges: []
)");
    writeExecutable("child/say.sh", R"sh(#!/bin/sh
req=$(cat)
subject=$(printf '%s' "$req" | sed -n 's/.*"subject":"\([^"]*\)".*/\1/p')
printf '%s' "$subject" > "$MARKS/child-subject"
printf '{"state_delta":{"said":"child got %s"}}\n' "$subject"
)sh");
    dir_.write(".secrets/filed", std::string(kFiled) + "\n");
    dir_.write("prompts/ask.md", "The token is ${secret:TOKEN}, the key {{key}}. Repeat them.");
    // The tool keeps what it got outside the experience folder (the proof it got the values),
    // prints it to stderr, and answers with the token in the state and its whole request as
    // its edge output.
    writeExecutable("tools/leak.sh", R"sh(#!/bin/sh
req=$(cat)
printf '%s' "$req" > "$MARKS/leak-request.json"
printf 'request: %s\n' "$req" >&2
tok=$(printf '%s' "$req" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
printf '{"state_delta":{"echo":"got %s"},"edge_output":%s}\n' "$tok" "$req"
)sh");
    writeExecutable("tools/fails.sh", R"sh(#!/bin/sh
req=$(cat)
tok=$(printf '%s' "$req" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
printf 'cannot log in with %s\n' "$tok" >&2
exit 3
)sh");
    // The coding CLI echoes its environment's token and its arguments (the prompt); printf, not
    // echo, which would turn the value's backslash into an escape.
    writeExecutable("bin/claude", R"sh(#!/bin/sh
printf '%s' "$API_TOKEN" > "$MARKS/cli-token"
printf 'token=%s args=%s\n' "$API_TOKEN" "$*"
)sh");
    llm_.setHandler([](const RecordedRequest& request) {
      const json body = request.json();
      std::string prompt;
      for (const json& message : body["messages"]) {
        if (message["content"].is_string()) {
          prompt += message["content"].get<std::string>();
        }
      }
      return FakeLlmServer::openAiText("You said: " + prompt);
    });
    receiver_.setHandler(
        [](const RecordedRequest&) { return FakeLlmServer::json(200, json::object()); });
  }

  std::map<std::string, std::string> env(const std::string& token = std::string(kToken)) {
    auto vars = openAiServerEnv(llm_);
    vars["OPENAI_API_KEY"] = std::string(kProviderKey);
    vars["SEC_TOKEN"] = token;
    vars["MARKS"] = marks_.path().string();
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read only
    vars["PATH"] = (dir_.path() / "bin").string() + ":" + (path != nullptr ? path : "/bin");
    vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver_.baseUrl();
    vars["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "";
    vars["OTEL_SDK_DISABLED"] = "";
    return vars;
  }

  // The needles found in `text`, named with `where`.
  static std::vector<std::string> leaksIn(const std::string& where, const std::string& text) {
    std::vector<std::string> found;
    for (const std::string& needle : kNeedles) {
      if (text.find(needle) != std::string::npos) {
        found.push_back(where + " holds \"" + needle + "\"");
      }
    }
    return found;
  }
  static std::string readAll(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  // Every regular file in an .openexpertise/ folder of the experience or of its nested one
  // (SQLite files included, byte for byte).
  std::vector<std::string> leaksUnderStore(size_t* files = nullptr) {
    std::vector<std::string> found;
    size_t count = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir_.path())) {
      if (entry.is_regular_file() &&
          entry.path().string().find("/.openexpertise/") != std::string::npos) {
        ++count;
        auto more = leaksIn(entry.path().string(), readAll(entry.path()));
        found.insert(found.end(), more.begin(), more.end());
      }
    }
    if (files != nullptr) {
      *files = count;
    }
    return found;
  }

  FakeLlmServer llm_;
  FakeLlmServer receiver_;
  TempDir marks_;
};

TEST_F(SecretsTest, NoValueReachesAnythingOeWritesWhileTheProgramsGetThem) {
  const fs::path cassette = marks_.path() / "cassette.jsonl";
  auto r = oe({"run", dir_.path().string(), "--json", "--otel", "--llm-record", cassette.string()},
              env());
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;  // `fails` fails: the run is partial
  const json summary = json::parse(r.out);
  ASSERT_EQ(summary["status"], "partial") << r.out;
  const std::string run_id = summary["run_id"];

  // The programs and the provider got the values.
  const json request = json::parse(readAll(marks_.path() / "leak-request.json"));
  EXPECT_EQ(request["token"], kToken);
  EXPECT_EQ(request["header"], "Bearer " + std::string(kFiled));
  EXPECT_EQ(readAll(marks_.path() / "cli-token"), kToken);
  EXPECT_EQ(readAll(marks_.path() / "child-subject"), kToken);
  ASSERT_EQ(llm_.requests().size(), 1U);
  EXPECT_NE(llm_.requests()[0].body.find(kToken), std::string::npos);
  // The key reached the prompt through {{key}}, from the args the node wrote.
  const std::string sent = llm_.requests()[0].json().dump();
  const std::string escaped = json(std::string(kFiled)).dump();
  EXPECT_NE(sent.find(escaped.substr(1, escaped.size() - 2)), std::string::npos) << sent;
  EXPECT_EQ(llm_.requests()[0].header("authorization"), "Bearer " + std::string(kProviderKey));

  // What oe kept shows the placeholders.
  const json& state = summary["final_state"];
  EXPECT_EQ(state["echo"], "got \xC2\xABsecret:TOKEN\xC2\xBB");
  EXPECT_EQ(state["said"], "child got \xC2\xABsecret:TOKEN\xC2\xBB");
  EXPECT_TRUE(fs::exists(dir_.path() / "child" / ".openexpertise" / "runs"));
  EXPECT_EQ(state["cli"],
            "token=\xC2\xABsecret:TOKEN\xC2\xBB args=-p use "
            "\xC2\xABsecret:FILED\xC2\xBB with got \xC2\xABsecret:TOKEN\xC2\xBB "
            "--output-format text\n");
  EXPECT_NE(state["answer"].get<std::string>().find("\xC2\xABsecret:FILED\xC2\xBB"),
            std::string::npos)
      << state["answer"];
  EXPECT_NE(state["answer"].get<std::string>().find("\xC2\xABsecret:TOKEN\xC2\xBB"),
            std::string::npos)
      << state["answer"];
  std::string failure;
  for (const json& event : events(run_id)) {
    if (event.value("type", "") == "node.failed") {
      failure = event.value("error", "");
    }
  }
  EXPECT_NE(failure.find("cannot log in with \xC2\xABsecret:TOKEN\xC2\xBB"), std::string::npos)
      << failure;

  auto report = oe({"inspect", run_id, "--experience", dir_.path().string(), "--html", "--out",
                    (marks_.path() / "report.html").string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  auto inspected = oe({"inspect", run_id, "--experience", dir_.path().string(), "--json"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;

  size_t files = 0;
  std::vector<std::string> found = leaksUnderStore(&files);
  EXPECT_GE(files, 5U);  // the log, the pin, the state, the cache, the spec snapshot at least
  for (const auto& [where, text] : std::vector<std::pair<std::string, std::string>>{
           {"the HTML report", readAll(marks_.path() / "report.html")},
           {"the recording", readAll(cassette)},
           {"oe run's output", r.out + r.err},
           {"oe inspect --json", inspected.out + inspected.err}}) {
    EXPECT_FALSE(text.empty()) << where;
    auto more = leaksIn(where, text);
    found.insert(found.end(), more.begin(), more.end());
  }
  ASSERT_FALSE(receiver_.requests().empty()) << "no OTLP payload arrived";
  for (const auto& post : receiver_.requests()) {
    auto more = leaksIn("an OTLP payload", post.body);
    found.insert(found.end(), more.begin(), more.end());
  }
  EXPECT_TRUE(found.empty()) << testing::PrintToString(found);
  EXPECT_NE(readAll(cassette).find("API_TOKEN=\xC2\xABsecret:TOKEN\xC2\xBB"), std::string::npos);

  // A replay of the recording matches without the provider (its keys hold no value), and the
  // cache serves an unchanged secret, not a changed one.
  auto again = oe({"run", dir_.path().string(), "--json"}, env());
  const json second = json::parse(again.out);
  EXPECT_EQ(second["nodes"]["cached"], 3) << again.out;  // all but the failing tool
  auto changed = oe({"run", dir_.path().string(), "--json"}, env("tok-Other-5512-zq"));
  const json third = json::parse(changed.out);
  EXPECT_EQ(third["nodes"]["cached"], 0) << changed.out;
  EXPECT_EQ(json::parse(readAll(marks_.path() / "leak-request.json"))["token"],
            "tok-Other-5512-zq");
  auto replayed =
      oe({"run", dir_.path().string(), "--json", "--no-cache", "--llm-replay", cassette.string()},
         env());
  const json fourth = json::parse(replayed.out);
  EXPECT_EQ(fourth["final_state"]["cli"], state["cli"]) << replayed.out << replayed.err;
  EXPECT_EQ(fourth["final_state"]["answer"], state["answer"]) << replayed.out << replayed.err;
  found = leaksUnderStore();
  EXPECT_TRUE(found.empty()) << testing::PrintToString(found);
}

TEST_F(SecretsTest, AMissingSecretIsNamedBeforeAnythingIsRecorded) {
  auto vars = env();
  vars["SEC_TOKEN"] = "";
  auto r = oe({"run", dir_.path().string(), "--json"}, vars);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("experience.yaml:4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("secret \"TOKEN\" reads the environment variable SEC_TOKEN, which is not "
                       "set; set SEC_TOKEN"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() / ".openexpertise" / "runs"));

  // After a run, the next one reads the spec snapshot instead of validating: the run itself
  // refuses, before it writes a log.
  auto ran = oe({"run", dir_.path().string(), "--json"}, env());
  ASSERT_EQ(json::parse(ran.out)["status"], "partial") << ran.out << ran.err;
  ASSERT_TRUE(fs::exists(dir_.path() / ".openexpertise" / "experience.yaml.spec-snapshot"));
  const auto logs = [this] {
    size_t count = 0;
    for (const auto& entry : fs::directory_iterator(dir_.path() / ".openexpertise" / "runs")) {
      count += entry.path().extension() == ".jsonl" ? 1 : 0;
    }
    return count;
  };
  const size_t before = logs();
  auto refused = oe({"run", dir_.path().string(), "--json"}, vars);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("secret \"TOKEN\" reads the environment variable SEC_TOKEN, which "
                             "is not set; set SEC_TOKEN"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(logs(), before);

  fs::remove(dir_.path() / ".secrets" / "filed");
  auto validated = oe({"validate", dir_.path().string()}, env());
  EXPECT_NE(validated.exit_code, 0);
  EXPECT_NE(validated.err.find("experience.yaml:5"), std::string::npos) << validated.err;
  EXPECT_NE(validated.err.find("secret \"FILED\" reads the file"), std::string::npos)
      << validated.err;

  std::string yaml(kExperience);
  yaml.insert(yaml.find("  edges:"),
              "    - { id: extra, kind: tool, impl: ./tools/leak.sh, args: "
              "{ a: \"${secret:TOKNE}\", b: \"${secret:A-B}\" } }\n");
  writeExperience(yaml);
  dir_.write(".secrets/filed", std::string(kFiled));
  auto unknown = oe({"validate", dir_.path().string()}, env());
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("unknown secret \"TOKNE\"; did you mean \"TOKEN\"?"),
            std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("args.b: \"${secret:A-B}...\" is not a secret reference"),
            std::string::npos)
      << unknown.err;
}

// On PostgreSQL with the attempts run by an `oe worker`: the queue rows, the state, the events and
// the cache in the database hold no value either (every table, every column, as text).
TEST_F(SecretsTest, NoValueReachesAnyPostgresqlTableWithWorkers) {
  PgTestDb db;
  auto vars = env();
  std::vector<std::string> argv = {OE_EXE, "worker", "--store",       db.url(),
                                   "--id", "w1",     "--concurrency", "2"};
  auto worker_env = vars;
  worker_env["OE_PLUGIN_PATH"] = "";
  worker_env["OE_TRUST_FILE"] = trustFile().string();
  BackgroundProcess worker(argv, worker_env, dir_.path(), marks_.path() / "worker");
  auto r = oe({"run", dir_.path().string(), "--json", "--store", db.url(), "--workers"}, vars);
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(), 0) << worker.err();
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["status"], "partial") << r.out;
  EXPECT_EQ(json::parse(readAll(marks_.path() / "leak-request.json"))["token"], kToken);
  EXPECT_EQ(readAll(marks_.path() / "cli-token"), kToken);
  EXPECT_EQ(summary["final_state"]["echo"], "got \xC2\xABsecret:TOKEN\xC2\xBB");

  auto conn = pg::Connection::open(db.url());
  ASSERT_TRUE(conn) << conn.error().message;
  auto tables = (*conn)->exec(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND "
      "table_type = 'BASE TABLE'");
  ASSERT_TRUE(tables) << tables.error().message;
  ASSERT_GE(tables->size(), 5);
  std::vector<std::string> found;
  int rows_seen = 0;
  for (int i = 0; i < tables->size(); ++i) {
    const std::string table(tables->text(i, 0));
    // Each row as text; bytea columns would show hex, so the hex of each value is looked for too.
    auto rows = (*conn)->exec("SELECT t::text FROM " + pg::quoteIdentifier(table) + " t");
    ASSERT_TRUE(rows) << table << ": " << rows.error().message;
    for (int k = 0; k < rows->size(); ++k) {
      ++rows_seen;
      const std::string text(rows->text(k, 0));
      auto more = leaksIn("table " + table, text);
      found.insert(found.end(), more.begin(), more.end());
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (unsigned char c : std::string(kToken)) {
        hex += kHex[c >> 4];
        hex += kHex[c & 0x0f];
      }
      if (text.find(hex) != std::string::npos) {
        found.push_back("table " + table + " holds the token in hex");
      }
    }
  }
  EXPECT_GT(rows_seen, 10);
  auto more = leaksIn("the worker's output", worker.out() + worker.err());
  found.insert(found.end(), more.begin(), more.end());
  more = leaksUnderStore();
  found.insert(found.end(), more.begin(), more.end());
  EXPECT_TRUE(found.empty()) << testing::PrintToString(found);
}

}  // namespace
}  // namespace oe::test
