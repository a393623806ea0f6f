// The `cli-agent` node kind (plugin dev.oe.cli-agent, reference §6.6): runs a coding CLI (Claude
// Code, Codex, Gemini) with the node's prompt, rendered through the host's oe.prompt/1, and maps
// its answer into the node's state delta as upstream does. Beyond upstream: the CLI runs in its
// own process group, which a timeout, stall, cancel or failure takes down whole; rate limits and
// overloads fail with a retryable status; each CLI's JSON event stream (stream: true) becomes live
// node.activity and its usage node.tokens; runtime.limits.<provider> caps how many CLIs of a kind
// run at once; --llm-record / --llm-replay cover the runs (oe.cli-replay/1-draft).
#include <sys/wait.h>

#include <oe/ext/draft/cli_replay.h>
#include <oe/ext/prompt.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <oe/cpp/draft/limits.hpp>
#include <oe/cpp/plugin.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli_output.hpp"
#include "command.hpp"
#include "llm_kit/ask.hpp"
#include "llm_kit/node_setup.hpp"
#include "llm_kit/options.hpp"
#include "llm_kit/output_schema.hpp"
#include "proc_kit/call_workdir.hpp"
#include "proc_kit/cancel_token.hpp"
#include "proc_kit/subprocess.hpp"
#include "proc_kit/supervisor.hpp"

#ifndef OE_CLI_AGENT_PLUGIN_VERSION
#error "OE_CLI_AGENT_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::cliagent {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kDefaultTimeoutMs = 600000;  // upstream's defaultTimeoutMs
constexpr int64_t kMinTimeoutMs = 1000;        // upstream's schema minimum
constexpr size_t kStderrInMessage = 500;       // upstream: the first 500 chars of stderr
constexpr size_t kMaxStdout = size_t{64} << 20U;
constexpr size_t kMaxStreamLine = size_t{16} << 20U;

constexpr const char* kSpecSchema =
    R"j({"type":"object","required":["provider","prompt"],"properties":{)j"
    R"j("provider":{"enum":["claude-code","codex","gemini"],"description":"The CLI to run: )j"
    R"j(claude-code (claude), codex or gemini, found on PATH",)j"
    R"j("x-oe-program":{"programs":{"claude-code":"claude","codex":"codex","gemini":"gemini"},)j"
    R"j("search_path":"/env/PATH"}},)j"
    R"j("prompt":{"type":"string","minLength":1,"description":"The prompt text itself (not a )j"
    R"j(file). {{name}}, {{a.b}} and {{$item.id}} placeholders are filled from the node's )j"
    R"j(reads, edge inputs and args"},)j"
    R"j("model":{"type":"string","minLength":1,"description":"Passed as --model"},)j"
    R"j("workdir":{"type":"string","minLength":1,"x-oe-path":"directory","description":"The )j"
    R"j(CLI's working directory, relative to the experience directory (default: the )j"
    R"j(experience directory)"},)j"
    R"j("output_format":{"enum":["text","json"],"description":"text (default): stdout is )j"
    R"j(written to the node's single writes field. json: stdout (or Claude's result, or a )j"
    R"j(fenced block in it) is parsed as a JSON object, which becomes the state delta"},)j"
    R"j("schema":{"type":"object","x-oe-writes":"properties","description":"With )j"
    R"j(output_format: json, a JSON Schema the )j"
    R"j(parsed object must match"},)j"
    R"j("timeout_ms":{"type":"integer","minimum":1000,"description":"Wall-clock limit; the )j"
    R"j(CLI's whole process group is then terminated (default 600000)"},)j"
    R"j("stall_timeout_ms":{"type":"integer","minimum":1,"description":"oe: kill the CLI when )j"
    R"j(it prints nothing (stdout or stderr) for this long. Claude prints only at the end )j"
    R"j(unless stream: true"},)j"
    R"j("stream":{"type":"boolean","description":"oe: run the CLI with its JSON event stream )j"
    R"j((claude --output-format stream-json --verbose, codex exec --json, gemini )j"
    R"j(--output-format stream-json), so tool uses and messages appear as live node.activity )j"
    R"j(events and its usage as node.tokens (default false: upstream's command line)"},)j"
    R"j("extra_args":{"type":"array","items":{"type":"string"},"description":"Appended to the )j"
    R"j(command line after the model"},)j"
    R"j("env":{"type":"object","additionalProperties":{"type":"string"},"description":)j"
    R"j("Environment variables added to oe's own for the CLI"},)j"
    R"j("stdin":{"type":"string","description":"Text written to the CLI's stdin (which is )j"
    R"j(otherwise closed at once, so no CLI can wait on it)"},)j"
    R"j("args":{"type":"object","description":"Values for the prompt's placeholders; $.path )j"
    R"j(values are read from state"}}})j";

using llmkit::orRaise;

// The node's settings, checked once at create.
struct CliNodeSpec {
  std::string id;
  Provider provider = Provider::kClaudeCode;
  std::string prompt;
  std::optional<std::string> model;
  std::string workdir;           // absolute
  std::string workdir_declared;  // as written (empty: the experience directory)
  std::string workdir_relative;  // relative to the experience directory ("." for itself)
  bool json = false;
  bool stream = false;
  std::shared_ptr<const llmkit::OutputSchema> schema;
  int64_t timeout_ms = kDefaultTimeoutMs;
  std::optional<int64_t> stall_timeout_ms;
  std::vector<std::string> extra_args;
  std::vector<std::string> env;                 // "NAME=value"
  std::optional<std::string> path_override;     // env: PATH, used to find the program
  std::optional<prockit::SandboxSpec> sandbox;  // a policy is in force (docs/policy.md)
  std::optional<std::string> stdin_text;
  std::vector<std::string> writes;

  [[nodiscard]] std::string who() const { return "cli-agent \"" + id + "\""; }
  [[nodiscard]] std::string whoWithProvider() const {
    return who() + " (provider=" + providerName(provider) + ")";
  }
};

Expected<int64_t> integerField(const llmkit::Json& node, const char* key, int64_t minimum,
                               const std::string& who) {
  const auto& value = node.at(key);
  if (value.is_number_integer() ||
      (value.is_number_float() &&
       value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>())))) {
    const auto number = value.is_number_integer() ? value.get<int64_t>()
                                                  : static_cast<int64_t>(value.get<double>());
    if (number >= minimum) {
      return number;
    }
  }
  return fail(OE_INVALID_ARGUMENT, who + ": " + key + " must be an integer >= " +
                                       std::to_string(minimum) + ", got " + value.dump());
}

Expected<std::vector<std::string>> stringList(const llmkit::Json& node, const char* key,
                                              const std::string& who) {
  std::vector<std::string> out;
  auto it = node.find(key);
  if (it == node.end() || it->is_null()) {
    return out;
  }
  if (!it->is_array()) {
    return fail(OE_INVALID_ARGUMENT, who + ": " + key + " must be a list of strings");
  }
  for (const auto& item : *it) {
    if (!item.is_string()) {
      return fail(OE_INVALID_ARGUMENT,
                  who + ": " + key + " must be a list of strings, got " + item.dump());
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

Expected<CliNodeSpec> readSpec(std::string_view config_json) {
  auto config = llmkit::parseNodeConfig(config_json, "cli-agent");
  if (!config) {
    return std::move(config).failure();
  }
  const llmkit::Json& node = config->node;
  CliNodeSpec spec;
  if (auto id = node.find("id"); id != node.end() && id->is_string()) {
    spec.id = id->get<std::string>();
  }
  const std::string who = spec.who();
  const llmkit::Json provider = node.value("provider", llmkit::Json());
  const auto named =
      provider.is_string() ? providerNamed(provider.get<std::string>()) : std::optional<Provider>();
  if (!named) {
    return fail(OE_INVALID_ARGUMENT,
                who +
                    ": provider must be one of claude-code, codex, gemini; "
                    "got " +
                    (provider.is_null() ? std::string("nothing") : provider.dump()));
  }
  spec.provider = *named;
  const llmkit::Json prompt = node.value("prompt", llmkit::Json());
  if (!prompt.is_string() || prompt.get_ref<const std::string&>().empty()) {
    return fail(OE_INVALID_ARGUMENT,
                who + " has no prompt; set prompt: to the prompt text (inline, not a file)");
  }
  spec.prompt = prompt.get<std::string>();
  auto model = llmkit::optionalString(node, "model", who);
  auto workdir = llmkit::optionalString(node, "workdir", who);
  auto format = llmkit::optionalString(node, "output_format", who);
  auto stdin_text = node.find("stdin");
  for (auto* field : {&model, &workdir, &format}) {
    if (!*field) {
      return field->failure();
    }
  }
  spec.model = *model;
  spec.workdir_declared = workdir->value_or("");
  spec.workdir = workdir->has_value() ? llmkit::resolvePath(config->experience_dir, **workdir)
                                      : config->experience_dir;
  {
    // What a recording keys the run by: the same on every machine that has the experience.
    const std::filesystem::path relative =
        std::filesystem::path(spec.workdir)
            .lexically_normal()
            .lexically_relative(std::filesystem::path(config->experience_dir).lexically_normal());
    spec.workdir_relative = relative.empty() ? spec.workdir : relative.generic_string();
  }
  if (format->has_value() && **format != "text" && **format != "json") {
    return fail(OE_INVALID_ARGUMENT,
                who + ": output_format must be text or json, got \"" + **format + "\"");
  }
  spec.json = format->value_or("text") == "json";
  if (stdin_text != node.end() && !stdin_text->is_null()) {
    if (!stdin_text->is_string()) {
      return fail(OE_INVALID_ARGUMENT, who + ": stdin must be a string");
    }
    spec.stdin_text = stdin_text->get<std::string>();
  }
  if (auto stream = node.find("stream"); stream != node.end() && !stream->is_null()) {
    if (!stream->is_boolean()) {
      return fail(OE_INVALID_ARGUMENT, who + ": stream must be true or false");
    }
    spec.stream = stream->get<bool>();
  }
  if (node.contains("timeout_ms") && !node["timeout_ms"].is_null()) {
    auto timeout = integerField(node, "timeout_ms", kMinTimeoutMs, who);
    if (!timeout) {
      return std::move(timeout).failure();
    }
    spec.timeout_ms = *timeout;
  }
  if (node.contains("stall_timeout_ms") && !node["stall_timeout_ms"].is_null()) {
    auto stall = integerField(node, "stall_timeout_ms", 1, who);
    if (!stall) {
      return std::move(stall).failure();
    }
    spec.stall_timeout_ms = *stall;
  }
  auto extra = stringList(node, "extra_args", who);
  auto writes = stringList(node, "writes", who);
  for (auto* field : {&extra, &writes}) {
    if (!*field) {
      return field->failure();
    }
  }
  spec.extra_args = std::move(*extra);
  spec.writes = std::move(*writes);
  spec.env = providerEnvironment(spec.provider);
  if (auto env = node.find("env"); env != node.end() && !env->is_null()) {
    if (!env->is_object()) {
      return fail(OE_INVALID_ARGUMENT, who + ": env must be a map of names to strings");
    }
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string() || name.empty() || name.find('=') != std::string::npos) {
        return fail(OE_INVALID_ARGUMENT,
                    who + ": env." + name + " must be a string (and the name have no '=')");
      }
      spec.env.push_back(name + "=" + value.get<std::string>());
      if (name == "PATH") {
        spec.path_override = value.get<std::string>();
      }
    }
  }
  if (auto schema = node.find("schema"); schema != node.end() && schema->is_object()) {
    auto compiled = llmkit::OutputSchema::compile(nlohmann::json(*schema));
    if (!compiled) {
      return fail(OE_INVALID_ARGUMENT,
                  who + ": schema is not a usable JSON Schema: " + compiled.failure().message);
    }
    spec.schema = std::move(*compiled);
  }
  if (config->sandbox.is_object()) {
    prockit::SandboxSpec sandbox;
    sandbox.exe = config->sandbox.value("exe", std::string());
    llmkit::Json confinement = config->sandbox.value("confinement", llmkit::Json::object());
    if (confinement.contains("env") && confinement["env"].is_object()) {
      // The node's own env: entries are the author's, not the host's: they pass a policy's
      // env allow-list (which removes what the host's environment carries).
      for (const auto& entry : spec.env) {
        const size_t eq = entry.find('=');
        confinement["env"]["set"][entry.substr(0, eq)] = entry.substr(eq + 1);
      }
    }
    sandbox.confinement = confinement.dump();
    spec.sandbox = std::move(sandbox);
  }
  return spec;
}

std::string orNothing(const std::string& text) {
  return text.empty() ? std::string("(nothing)") : text;
}

oe_status statusOf(FailureKind kind) {
  switch (kind) {
    case FailureKind::kRateLimited:
      return OE_RESOURCE_EXHAUSTED;
    case FailureKind::kOverloaded:
      return OE_UNAVAILABLE;
    default:
      return OE_UNKNOWN;
  }
}

std::string retryHint(FailureKind kind) {
  switch (kind) {
    case FailureKind::kRateLimited:
      return " (rate limited: on_error: retry with a backoff retries it)";
    case FailureKind::kOverloaded:
      return " (the provider is overloaded or unavailable: on_error: retry retries it)";
    default:
      return "";
  }
}

// What the envelope says about a failure, for the node's error message.
std::string envelopeDetail(const ResultEnvelope& envelope) {
  std::string text =
      "the CLI reported: " + orNothing(utf8Prefix(envelope.result.value_or(""), 500));
  if (envelope.api_error_status) {
    text += " (api_error_status " + std::to_string(*envelope.api_error_status) + ")";
  }
  if (!envelope.terminal_reason.empty()) {
    text += " (terminal_reason " + envelope.terminal_reason + ")";
  }
  return text;
}

// What came of a CLI run that ended on its own, live or from a recording: the node's answer,
// events and errors all follow from it, so a replay reproduces them.
struct Outcome {
  std::optional<int> exit_code;  // it exited with this code
  std::optional<int> signal;     // or a signal killed it
  std::string stdout_text;
  std::string stderr_head;
  std::string stderr_tail;
};

llmkit::Json outcomeJson(const Outcome& outcome) {
  llmkit::Json json;
  if (outcome.signal) {
    json["signal"] = *outcome.signal;
  } else {
    json["exit_code"] = outcome.exit_code.value_or(0);
  }
  json["stdout"] = outcome.stdout_text;
  json["stderr_head"] = outcome.stderr_head;
  json["stderr_tail"] = outcome.stderr_tail;
  return json;
}

std::optional<Outcome> outcomeFrom(const llmkit::Json& json) {
  if (!json.is_object()) {
    return std::nullopt;
  }
  Outcome outcome;
  const auto text = [&json](const char* key, std::string& into) {
    auto it = json.find(key);
    if (it == json.end() || !it->is_string()) {
      return false;
    }
    into = it->get<std::string>();
    return true;
  };
  if (auto it = json.find("signal"); it != json.end() && it->is_number_integer()) {
    outcome.signal = it->get<int>();
  } else if (auto code = json.find("exit_code"); code != json.end() && code->is_number_integer()) {
    outcome.exit_code = code->get<int>();
  } else {
    return std::nullopt;
  }
  if (!text("stdout", outcome.stdout_text)) {
    return std::nullopt;
  }
  text("stderr_head", outcome.stderr_head);
  text("stderr_tail", outcome.stderr_tail);
  return outcome;
}

// One `kind: cli-agent` node. Immutable after create, so invoke is reentrant (for_each).
class CliAgentNode final : public sdk::Node {
 public:
  CliAgentNode(const oe_host_api& api, CliNodeSpec spec) : api_(api), spec_(std::move(spec)) {}

  void invoke(sdk::Call& call) override {
    prockit::CancelToken token([&call] { return call.cancelled(); });
    prockit::CallRegistry::Scope active(calls_, call.context(), token);
    call.respond(orRaise(run(call, token)));
  }

  void cancel(oe_host_ctx* call) noexcept override { calls_.cancel(call); }

 private:
  Expected<std::string> run(const sdk::Call& call, prockit::CancelToken& token) const;
  Expected<std::string> renderPrompt(const sdk::Call& call) const;
  // Spawns the CLI and supervises it; a run that did not end on its own (timeout, stall,
  // cancel, overflow, not startable) is its failure. `on_line`: each stdout line, with stream.
  Expected<Outcome> runLive(const sdk::Call& call, prockit::CancelToken& token,
                            std::vector<std::string> argv, const std::string& input,
                            const std::function<void(const std::string&)>& on_line,
                            const std::string& last_activity) const;

  const oe_host_api& api_;
  const CliNodeSpec spec_;
  mutable prockit::CallRegistry calls_;
};

Expected<std::string> CliAgentNode::renderPrompt(const sdk::Call& call) const {
  llmkit::LlmServices services;
  services.prompt = call.prompt();
  if (!services.prompt) {
    return fail(OE_FAILED_PRECONDITION, spec_.who() +
                                            " needs the host service " OE_EXT_PROMPT
                                            " (prompt rendering), which this host does not offer");
  }
  return llmkit::renderPrompt(services, spec_.prompt, spec_.who());
}

// oe.cli-replay/1-draft, when the host offers it: --llm-record / --llm-replay of the run, and its
// tokens counted against runtime.budget. A host without it: the CLI runs, and node.tokens is
// emitted here.
class CliReplay {
 public:
  CliReplay(const oe_host_api& api, oe_host_ctx* call)
      : api_(api),
        call_(call),
        table_(static_cast<const oe_cli_replay_api*>(api.get_extension(call, OE_EXT_CLI_REPLAY))) {}

  [[nodiscard]] bool offered() const {
    return OE_HAS_MEMBER(oe_cli_replay_api, table_, finish) && table_->begin != nullptr &&
           table_->finish != nullptr;
  }

  // The recorded outcome under --llm-replay; nullopt: run the CLI.
  [[nodiscard]] Expected<std::optional<llmkit::Json>> begin(const std::string& request) const {
    sdk::HostBuffer recorded(api_, call_);
    sdk::HostBuffer error(api_, call_);
    const oe_status status = table_->begin(call_, sdk::toStr(request), recorded.out(), error.out());
    if (status != OE_OK) {
      return fail(status, error.filled() ? error.str()
                                         : OE_EXT_CLI_REPLAY " begin failed with status " +
                                               std::to_string(status));
    }
    if (!recorded.filled()) {
      return std::optional<llmkit::Json>();
    }
    return std::optional<llmkit::Json>(
        llmkit::Json::parse(recorded.view(), nullptr, /*allow_exceptions=*/false));
  }

  [[nodiscard]] std::optional<sdk::Failure> finish(const std::string& request,
                                                   const std::string& outcome) const {
    sdk::HostBuffer error(api_, call_);
    const oe_status status =
        table_->finish(call_, sdk::toStr(request), sdk::toStr(outcome), error.out());
    if (status == OE_OK) {
      return std::nullopt;
    }
    return sdk::Failure{status, error.filled() ? error.str()
                                               : OE_EXT_CLI_REPLAY " finish failed with status " +
                                                     std::to_string(status)};
  }

 private:
  const oe_host_api& api_;
  oe_host_ctx* call_;
  const oe_cli_replay_api* table_;
};

std::string dumped(const llmkit::Json& json) {
  return json.dump(-1, ' ', false, llmkit::Json::error_handler_t::replace);
}

Expected<std::string> CliAgentNode::run(const sdk::Call& call, prockit::CancelToken& token) const {
  auto activity = [&call](const std::string& text) {
    call.emitEvent("node.activity", dumped(llmkit::Json{{"activity", text}}));
  };
  if (token.requested()) {
    return fail(OE_CANCELLED, "cancelled");
  }
  // Checked before the run, so a misdeclared node spends nothing (upstream: after the run).
  if (!spec_.json && spec_.writes.size() > 1) {
    OutputSpec output{false, spec_.writes, nullptr, spec_.id};
    return parseOutput("", output).failure();
  }
  auto prompt = renderPrompt(call);
  if (!prompt) {
    return std::move(prompt).failure();
  }

  CommandSpec command;
  command.provider = spec_.provider;
  command.model = spec_.model;
  command.json = spec_.json;
  command.stream = spec_.stream;
  command.extra_args = spec_.extra_args;
  command.prompt_on_stdin = prompt->size() > kMaxArgvPrompt;
  if (command.prompt_on_stdin && spec_.stdin_text) {
    return fail(OE_INVALID_ARGUMENT,
                spec_.whoWithProvider() + ": the prompt (" + std::to_string(prompt->size()) +
                    " bytes) is too long for the command line and stdin: is set too; shorten "
                    "one of them");
  }
  command.prompt = std::move(*prompt);
  std::vector<std::string> argv = buildArgv(command);
  const std::string input =
      command.prompt_on_stdin ? command.prompt : spec_.stdin_text.value_or(std::string());

  // Under --llm-replay the host answers from the recording, keyed by what oe would run, and the
  // CLI is never started (nor looked for on PATH, nor given a runtime.limits slot).
  const CliReplay replay(api_, call.context());
  std::string request;
  std::optional<llmkit::Json> recorded;
  if (replay.offered()) {
    std::vector<std::string> env = spec_.env;
    std::sort(env.begin(), env.end());
    request = dumped(llmkit::Json{{"provider", providerName(spec_.provider)},
                                  {"argv", argv},
                                  {"workdir", spec_.workdir_relative},
                                  {"env", env},
                                  {"stdin", input}});
    auto begun = replay.begin(request);
    if (!begun) {
      return std::move(begun).failure();  // the host's message names the node and provider
    }
    recorded = std::move(*begun);
  }

  StreamReader reader(spec_.provider == Provider::kCodex    ? StreamFormat::kCodex
                      : spec_.provider == Provider::kGemini ? StreamFormat::kGemini
                                                            : StreamFormat::kClaude);
  std::string last_activity;
  auto onLine = [&](const std::string& line) {
    for (auto& text : reader.line(line)) {
      activity(text);
      last_activity = std::move(text);
    }
  };
  Outcome outcome;
  if (recorded) {
    auto replayed = outcomeFrom(*recorded);
    if (!replayed) {
      return fail(OE_DATA_LOSS, spec_.whoWithProvider() +
                                    ": its run in the --llm-replay recording is not an outcome "
                                    "({exit_code or signal, stdout, ...}); re-record it with "
                                    "--llm-record");
    }
    outcome = std::move(*replayed);
    activity(std::string("replaying ") + providerName(spec_.provider) + " from the recording");
    if (spec_.stream) {
      LineSplitter lines(kMaxStreamLine);
      for (const std::string& line : lines.feed(outcome.stdout_text)) {
        onLine(line);
      }
      if (auto last = lines.finish()) {
        onLine(*last);
      }
    }
  } else {
    auto ran = runLive(call, token, std::move(argv), input, onLine, last_activity);
    if (!ran) {
      return std::move(ran).failure();
    }
    outcome = std::move(*ran);
  }

  // Claude's envelope: the whole stdout with --output-format json, the result event when
  // streaming. It decides before the exit code does (the CLI may exit 0 on an API error).
  std::optional<ResultEnvelope> envelope = spec_.stream ? reader.result() : std::nullopt;
  if (!envelope && spec_.provider == Provider::kClaudeCode && spec_.json) {
    envelope = parseResultEnvelope(outcome.stdout_text);
  }
  const bool has_usage = envelope && envelope->has_usage;
  llmkit::Json usage;
  if (has_usage) {
    usage["input_tokens"] = envelope->input_tokens;
    usage["output_tokens"] = envelope->output_tokens;
    usage["model"] = envelope->model.empty() ? spec_.model.value_or(providerName(spec_.provider))
                                             : envelope->model;
    if (envelope->cost_usd) {
      usage["cost_usd"] = *envelope->cost_usd;
    }
  }
  if (replay.offered()) {
    // The host accounts the usage (node.tokens, runtime.budget) and records the run.
    llmkit::Json done = outcomeJson(outcome);
    if (has_usage) {
      done["usage"] = usage;
    }
    if (auto failed = replay.finish(request, dumped(done))) {
      return fail(failed->status, std::move(failed->message));
    }
  } else if (has_usage) {
    llmkit::Json tokens{{"input_tokens", usage["input_tokens"]},
                        {"output_tokens", usage["output_tokens"]},
                        {"model", usage["model"]},
                        {"provider", providerName(spec_.provider)}};
    if (usage.contains("cost_usd")) {
      tokens["cost_usd"] = usage["cost_usd"];
    }
    call.emitEvent("node.tokens", dumped(tokens));
  }

  const std::string& stderr_head = outcome.stderr_head;
  if (outcome.signal) {
    return fail(OE_UNKNOWN, spec_.whoWithProvider() + " was killed by signal " +
                                prockit::signalName(*outcome.signal) + ". stderr: " + stderr_head);
  }
  const int exit_code = outcome.exit_code.value_or(-1);
  const ResultEnvelope* seen = envelope ? &*envelope : nullptr;
  if (exit_code != 0) {
    const FailureKind kind =
        classifyFailure(exit_code, outcome.stdout_text, outcome.stderr_tail, seen);
    std::string message = spec_.whoWithProvider() + " exited with exit code " +
                          std::to_string(exit_code) + ". stderr: " + stderr_head;
    if (seen != nullptr && seen->is_error) {
      message += "; " + envelopeDetail(*seen);
    }
    return fail(statusOf(kind), message + retryHint(kind));
  }
  if (seen != nullptr && seen->is_error) {
    const FailureKind kind =
        classifyFailure(exit_code, outcome.stdout_text, outcome.stderr_tail, seen);
    return fail(statusOf(kind), spec_.whoWithProvider() +
                                    " failed (is_error: true, exit code 0); " +
                                    envelopeDetail(*seen) + retryHint(kind));
  }
  if (spec_.stream && (!envelope || !envelope->result)) {
    return fail(OE_UNKNOWN, spec_.whoWithProvider() + " ended without a result event in its " +
                                streamFormatName(spec_.provider) +
                                " output. stderr: " + stderr_head);
  }

  activity(spec_.json ? "parsing JSON output" : "parsing text output");
  OutputSpec output{spec_.json, spec_.writes, spec_.schema.get(), spec_.id};
  // Streaming: the result event's text is what --output-format text/json would have printed.
  auto delta = parseOutput(spec_.stream ? *envelope->result : outcome.stdout_text, output);
  if (!delta) {
    return std::move(delta).failure();
  }
  llmkit::Json response{{"state_delta", std::move(*delta)}};
  if (has_usage) {
    llmkit::Json metrics{{"tokens_in", envelope->input_tokens},
                         {"tokens_out", envelope->output_tokens}};
    if (envelope->cost_usd) {
      metrics["cost_usd"] = *envelope->cost_usd;
    }
    response["metrics"] = std::move(metrics);
  }
  return dumped(response);
}

Expected<Outcome> CliAgentNode::runLive(const sdk::Call& call, prockit::CancelToken& token,
                                        std::vector<std::string> argv, const std::string& input,
                                        const std::function<void(const std::string&)>& on_line,
                                        const std::string& last_activity) const {
  // `workspace: worktree`: the same folder in the attempt's worktree (a workdir outside the
  // experience folder, absolute, stays where it is).
  std::string workdir = spec_.workdir;
  if (const auto tree = prockit::callWorkdir(call.request());
      tree && std::filesystem::path(spec_.workdir_relative).is_relative()) {
    workdir = (std::filesystem::path(*tree) / spec_.workdir_relative).lexically_normal().string();
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(workdir, ec)) {
    return fail(OE_NOT_FOUND, spec_.whoWithProvider() + ": workdir " + workdir +
                                  " is not a directory (declared as \"" + spec_.workdir_declared +
                                  "\"); create it or fix workdir:");
  }
  const char* program = programOf(spec_.provider);
  const auto path =
      prockit::findOnPath(program, spec_.path_override ? spec_.path_override->c_str() : nullptr);
  if (!path) {
    return fail(OE_FAILED_PRECONDITION,
                spec_.whoWithProvider() + ": the `" + program +
                    "` command was not found on PATH; install the CLI or put its directory on "
                    "PATH (env: PATH on the node also works)");
  }

  prockit::SpawnRequest request;
  request.path = *path;
  request.argv = std::move(argv);
  request.cwd = workdir;
  request.env = prockit::environmentWith(spec_.env);
  request.sandbox = spec_.sandbox;

  prockit::SuperviseOptions options;
  options.input = input;
  options.timeout = milliseconds(spec_.timeout_ms);
  if (spec_.stall_timeout_ms) {
    options.stall_timeout = milliseconds(*spec_.stall_timeout_ms);
  }
  options.max_stdout = kMaxStdout;
  options.stderr_head = kStderrInMessage;
  options.clean_group_on_exit = true;

  LineSplitter lines(kMaxStreamLine);
  if (spec_.stream) {
    options.on_stdout = [&](std::string_view chunk) {
      for (const std::string& line : lines.feed(chunk)) {
        on_line(line);
      }
      return true;
    };
  }

  // runtime.limits.<provider> (max_in_flight, requests_per_minute) bounds how many of these CLIs
  // run at once across the run; the slot is held until the process group is gone.
  auto slot = sdk::draft::acquireLimit(api_, call.context(), providerName(spec_.provider));
  if (!slot && slot.failure().status != OE_UNIMPLEMENTED) {
    return fail(slot.failure().status,
                slot.failure().status == OE_CANCELLED
                    ? std::string("cancelled")
                    : spec_.whoWithProvider() + ": " + slot.failure().message);
  }
  call.emitEvent("node.activity",
                 dumped(llmkit::Json{{"activity", std::string("spawning ") +
                                                      providerName(spec_.provider) + " (timeout " +
                                                      std::to_string(spec_.timeout_ms) + "ms)"}}));
  auto ran = prockit::supervise(std::move(request), options, token);
  if (slot) {
    slot->reset();  // supervise returns once the CLI and its group are reaped
  }
  if (!ran) {
    return fail(OE_FAILED_PRECONDITION, spec_.whoWithProvider() + ": could not start " + *path +
                                            ": " + ran.failure().message);
  }
  if (spec_.stream) {
    if (auto last = lines.finish()) {
      on_line(*last);
    }
  }
  switch (ran->ending) {
    case prockit::Ending::kCancelled:
      return fail(OE_CANCELLED, "cancelled");
    case prockit::Ending::kTimedOut:
      return fail(OE_DEADLINE_EXCEEDED, spec_.who() + " timed out after " +
                                            std::to_string(spec_.timeout_ms) +
                                            "ms (provider=" + providerName(spec_.provider) + ")");
    case prockit::Ending::kStalled:
      return fail(
          OE_DEADLINE_EXCEEDED,
          spec_.whoWithProvider() + " stalled: no output for " +
              std::to_string(*spec_.stall_timeout_ms) +
              "ms (stall_timeout_ms), so its process group was killed" +
              (last_activity.empty() ? std::string() : "; last activity: " + last_activity) +
              ". stderr: " + ran->stderr_head);
    case prockit::Ending::kOverflow:
      return fail(OE_RESOURCE_EXHAUSTED,
                  spec_.whoWithProvider() + " printed more than " +
                      std::to_string(kMaxStdout >> 20U) +
                      " MiB on stdout; ask it to write large results to a file");
    default:
      break;
  }
  Outcome outcome;
  const int status = ran->wait_status;
  if (WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  outcome.stdout_text = std::move(ran->stdout_text);
  outcome.stderr_head = std::move(ran->stderr_head);
  outcome.stderr_tail = std::move(ran->stderr_tail);
  return outcome;
}

}  // namespace

class CliAgentPlugin {
 public:
  explicit CliAgentPlugin(sdk::Host host) : host_(host) {}

  static constexpr std::span<const sdk::KindSpec<CliAgentPlugin>> kinds();

  static std::unique_ptr<sdk::Node> create(CliAgentPlugin& plugin, std::string_view config_json) {
    return std::make_unique<CliAgentNode>(*plugin.host_.api(), orRaise(readSpec(config_json)));
  }

 private:
  sdk::Host host_;
};

namespace {
constexpr sdk::KindSpec<CliAgentPlugin> kKinds[] = {
    {"cli-agent",
     "Runs a coding CLI (Claude Code, Codex or Gemini) with a prompt; its answer is text for one "
     "field or a JSON object checked against the node's schema",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &CliAgentPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<CliAgentPlugin>> CliAgentPlugin::kinds() { return kKinds; }

}  // namespace oe::cliagent

OE_SDK_PLUGIN(oe::cliagent::CliAgentPlugin, "dev.oe.cli-agent", OE_CLI_AGENT_PLUGIN_VERSION,
              "The cli-agent node kind: Claude Code, Codex and Gemini CLIs as nodes")
