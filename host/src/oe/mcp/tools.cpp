// `oe mcp`'s tools and resources. The read-only tools run in-process on the functions the
// commands use; the long ones (run, resume, evolve, ultra) and those that write (init, and diff for
// symmetry with the CLI's JSON) run a child `oe` (mcp/child_process.hpp), whose events become
// progress notifications and which a cancellation interrupts.
#include "oe/mcp/tools.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "oe/common/file.hpp"
#include "oe/events/event_log.hpp"
#include "oe/evolve/proposals.hpp"
#include "oe/mcp/child_process.hpp"
#include "oe/ops/context.hpp"
#include "oe/report/graph_render.hpp"
#include "oe/run/run.hpp"
#include "oe/runs/run_history.hpp"
#include "oe/spec/workspace.hpp"
#include "oe/state/state_store.hpp"
#include "proc_kit/subprocess.hpp"

namespace oe::mcp {
namespace {

namespace fs = std::filesystem;
using ops::Checked;
using ops::checkExperience;
using ops::percentDecode;
using ops::percentEncode;
using ops::StderrLog;
using report::GraphDirection;
using report::graphHtml;
using report::mermaidGraph;
using runs::findRun;
using runs::listRuns;
using Handler = Result<Json> (*)(const McpContext&, mcp::ToolCall&);

// The experience folder (or yaml) a tool names, inside the roots.
Result<fs::path> experienceArg(const McpContext& context, const mcp::ToolCall& call,
                               std::string_view name = "experience_path") {
  auto arg = call.stringArg(name, true);
  if (!arg) {
    return std::move(arg).error();
  }
  return context.guard.resolve(*arg);
}

std::string joinDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const auto& d : diagnostics) {
    text += (text.empty() ? "" : "\n") + d.format();
  }
  return text;
}

// The experience loaded without plugins (state, progress totals); the error lists why not.
Result<spec::Experience> loadModel(const fs::path& path) {
  auto loaded = spec::loadExperience(spec::resolveExperiencePath(path));
  if (!loaded.experience || hasErrors(loaded.diagnostics)) {
    return makeError(joinDiagnostics(loaded.diagnostics));
  }
  return std::move(*loaded.experience);
}

// The run history of the experience in `yaml` (spec::workspaceDir: its own for a file other
// than experience.yaml).
fs::path runsDir(const fs::path& yaml) { return spec::workspaceDir(yaml) / "runs"; }

// The experience file `path` names (a folder: its experience.yaml).
Result<fs::path> experienceYamlAt(const fs::path& path) {
  const auto yaml = spec::resolveExperiencePath(path);
  std::error_code ec;
  if (!fs::is_regular_file(yaml, ec)) {
    return makeError("experience.yaml not found at " + path.string() +
                     ". Pass a directory containing experience.yaml or the yaml file directly.");
  }
  return yaml;
}

Result<Json> validateTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  if (!path) {
    return std::move(path).error();
  }
  StderrLog sink;
  plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
  const Checked checked =
      checkExperience(*path, registry, call.args().value("strict", false) == true);
  Json errors = Json::array();
  Json warnings = Json::array();
  for (const auto& d : checked.diagnostics) {
    (d.severity == Severity::kError ? errors : warnings).push_back(d.format());
  }
  if (!checked.valid()) {
    return Json{{"valid", false}, {"errors", std::move(errors)}, {"warnings", std::move(warnings)}};
  }
  const spec::Experience& model = *checked.model();
  return Json{{"valid", true},
              {"file", model.file.string()},
              {"nodes", model.nodes.size()},
              {"edges", model.edges.size()},
              {"warnings", std::move(warnings)}};
}

Result<Json> stateTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto field = call.stringArg("field", false);
  if (!path || !field) {
    return !path ? std::move(path).error() : std::move(field).error();
  }
  auto model = loadModel(*path);
  if (!model) {
    return std::move(model).error();
  }
  const fs::path db = run::statePath(*model);
  std::error_code ec;
  if (!fs::exists(db, ec)) {
    return Json{{"note", "state file does not exist yet (no runs performed)"}};
  }
  auto store = state::StateStore::open(db, model->state);
  if (!store) {
    return std::move(store).error();
  }
  if (field->empty()) {
    return Json{{"snapshot", (*store)->snapshot()}};
  }
  if (model->state.find(*field) == nullptr) {
    return makeError("\"" + *field + "\" is not a field of state.schema in " +
                     model->file.string());
  }
  const Json* value = (*store)->field(*field);
  return Json{{"field", *field}, {"value", value == nullptr ? Json() : *value}};
}

Result<Json> inspectTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto id = call.stringArg("run_id", false);
  if (!path || !id) {
    return !path ? std::move(path).error() : std::move(id).error();
  }
  auto yaml = experienceYamlAt(*path);
  if (!yaml) {
    return std::move(yaml).error();
  }
  auto run = findRun(runsDir(*yaml), *id, id->empty());
  if (!run) {
    return std::move(run).error();
  }
  auto log = events::readEventLog(run->log);
  if (!log) {
    return std::move(log).error();
  }
  return Json{{"run_id", run->id}, {"events", log->events}, {"warnings", log->warnings}};
}

Result<Json> graphTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto direction = call.stringArg("direction", false);
  if (!path || !direction) {
    return !path ? std::move(path).error() : std::move(direction).error();
  }
  if (!direction->empty() && *direction != "TD" && *direction != "LR") {
    return makeError("direction must be \"TD\" (top down) or \"LR\" (left to right)");
  }
  StderrLog sink;
  plugins::PluginRegistry registry(&sink, plugins::Access::kDescribe);
  const Checked checked = checkExperience(*path, registry, false);
  if (!checked.valid()) {
    return makeError(joinDiagnostics(checked.diagnostics));
  }
  const auto dir = *direction == "LR" ? GraphDirection::kLeftRight : GraphDirection::kTopDown;
  Json out = {{"mermaid", mermaidGraph(*checked.model(), dir)}};
  if (call.args().value("html", false) == true) {
    out["html"] = graphHtml(*checked.model(), dir);
  }
  return out;
}

Result<Json> runsTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  if (!path) {
    return std::move(path).error();
  }
  auto yaml = experienceYamlAt(*path);
  if (!yaml) {
    return std::move(yaml).error();
  }
  Json runs = Json::array();
  for (const auto& record : listRuns(runsDir(*yaml), true)) {
    runs.push_back(record.toJson());
  }
  return Json{{"runs", std::move(runs)}};
}

// "node greet finished (1/3)" per node that reached an end, as progress of the call.
class NodeProgress {
 public:
  NodeProgress(mcp::ToolCall& call, const fs::path& path) : call_(call) {
    if (auto model = loadModel(path)) {
      for (const auto& node : model->nodes) {
        known_.insert(node.id);
      }
    }
  }

  void onEvent(const Json& event) {
    const std::string type = stringField(event, "type");
    const char* verb = type == "node.finished"
                           ? (event.value("cached", false) ? "cached" : "finished")
                       : type == "node.failed"  ? "failed"
                       : type == "node.skipped" ? "skipped"
                                                : nullptr;
    const Json& id = event.value("node_id", Json());
    if (verb == nullptr || !id.is_string() ||
        (!known_.empty() && known_.count(id.get<std::string>()) == 0) ||
        !done_.insert(id.get<std::string>()).second) {
      return;  // another event, a nested run's node, or a node seen already (for_each, retry)
    }
    const double total = static_cast<double>(std::max(known_.size(), done_.size()));
    call_.progress(static_cast<double>(done_.size()), total,
                   "node " + id.get<std::string>() + " " + verb + " (" +
                       std::to_string(done_.size()) + "/" +
                       std::to_string(static_cast<size_t>(total)) + ")");
  }

 private:
  mcp::ToolCall& call_;
  std::set<std::string> known_;
  std::set<std::string> done_;
};

// Runs `oe <args...>` for the call; its JSON stdout (the last document in it, after any stray
// line a plugin printed) is the result.
// With `on_event`, the child is asked for its events (--events-fd) and each one is passed on.
Result<mcp::ChildResult> runOe(const McpContext& context, mcp::ToolCall& call,
                               std::vector<std::string> args,
                               std::function<void(const Json&)> on_event) {
  mcp::ChildOptions options;
  options.argv = {context.oe_exe.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.cwd = context.guard.base();
  if (on_event) {
    options.argv.push_back("--events-fd");
    options.argv.push_back(std::to_string(mcp::kChildEventsFd));
    options.on_event = std::move(on_event);
  }
  auto result = mcp::runChild(options, call.cancel());
  if (result && result->cancelled) {
    return makeError("cancelled");  // never sent: a cancelled request gets no response
  }
  return result;
}

std::string childFailure(const std::string& verb, const mcp::ChildResult& child) {
  return "oe " + verb + " ended with " + prockit::describeWaitStatus(child.wait_status) +
         (child.stderr_tail.empty() ? std::string() : ": " + child.stderr_tail);
}

Json lastJsonDocument(const std::string& text) {
  Json doc = Json::parse(text, nullptr, false);
  if (!doc.is_discarded()) {
    return doc;
  }
  // Whole documents start at the beginning of a line; a stray line before it is skipped.
  for (auto pos = text.rfind("\n{"); pos != std::string::npos;
       pos = pos == 0 ? std::string::npos : text.rfind("\n{", pos - 1)) {
    doc = Json::parse(text.substr(pos + 1), nullptr, false);
    if (!doc.is_discarded()) {
      return doc;
    }
  }
  return nullptr;
}

// The flags oe_run and oe_resume share.
Result<std::vector<std::string>> runFlags(const mcp::ToolCall& call) {
  std::vector<std::string> flags = {"--json"};
  auto llm = call.stringArg("llm", false);
  if (!llm) {
    return std::move(llm).error();
  }
  if (!llm->empty()) {
    flags.insert(flags.end(), {"--llm", *llm});
  }
  if (const auto it = call.args().find("concurrency"); it != call.args().end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return makeError("concurrency must be a positive integer");
    }
    flags.insert(flags.end(), {"--concurrency", std::to_string(it->get<int64_t>())});
  }
  if (call.args().value("no_cache", false) == true) {
    flags.emplace_back("--no-cache");
  }
  return flags;
}

Result<Json> runLike(const McpContext& context, mcp::ToolCall& call, const std::string& verb,
                     std::vector<std::string> args, const fs::path& path) {
  NodeProgress progress(call, path);
  auto child = runOe(context, call, std::move(args),
                     [&progress](const Json& event) { progress.onEvent(event); });
  if (!child) {
    return std::move(child).error();
  }
  Json doc = lastJsonDocument(child->stdout_text);
  if (!doc.is_object() || !doc.contains("run_id")) {
    return makeError(childFailure(verb, *child));
  }
  return doc;  // a failed or partial run is a result (status says which), as upstream
}

Result<Json> runTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto flags = runFlags(call);
  if (!path || !flags) {
    return !path ? std::move(path).error() : std::move(flags).error();
  }
  std::vector<std::string> args = {"run", path->string()};
  args.insert(args.end(), flags->begin(), flags->end());
  if (const auto it = call.args().find("args"); it != call.args().end() && !it->is_null()) {
    if (!it->is_object()) {
      return makeError("args must be an object (the run-level args, e.g. {\"name\":\"World\"})");
    }
    args.insert(args.end(), {"--args", it->dump()});
  }
  if (call.args().value("fresh", false) == true) {
    args.emplace_back("--fresh");
  }
  return runLike(context, call, "run", std::move(args), *path);
}

Result<Json> resumeTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto id = call.stringArg("run_id", false);
  auto flags = runFlags(call);
  if (!path || !id || !flags) {
    return !path ? std::move(path).error() : !id ? std::move(id).error() : std::move(flags).error();
  }
  std::vector<std::string> args = {"resume"};
  if (id->empty()) {
    args.emplace_back("--last");
  } else {
    args.push_back(*id);
  }
  args.insert(args.end(), {"--experience", path->string()});
  args.insert(args.end(), flags->begin(), flags->end());
  return runLike(context, call, "resume", std::move(args), *path);
}

Result<Json> evolveTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto id = call.stringArg("run_id", true);
  auto llm = call.stringArg("llm", false);
  if (!path || !id || !llm) {
    return !path ? std::move(path).error() : !id ? std::move(id).error() : std::move(llm).error();
  }
  auto yaml = experienceYamlAt(*path);
  if (!yaml) {
    return std::move(yaml).error();
  }
  auto run = findRun(runsDir(*yaml), *id, false);
  if (!run) {
    return std::move(run).error();
  }
  std::vector<std::string> args = {"evolve", run->id, "--experience", yaml->string()};
  if (!llm->empty()) {
    args.insert(args.end(), {"--llm", *llm});
  }
  auto child = runOe(context, call, std::move(args), nullptr);
  if (!child) {
    return std::move(child).error();
  }
  if (!mcp::exitedOk(child->wait_status)) {
    return makeError(childFailure("evolve", *child));
  }
  const fs::path dir = yaml->parent_path();
  const fs::path report = evolve::evolutionDir(dir) / (run->id + ".md");
  auto markdown = readFile(report);
  if (!markdown) {
    return makeError("oe evolve wrote no report at " + report.string());
  }
  size_t count = 0;
  if (auto sidecar = evolve::readSidecar(evolve::sidecarPath(dir, run->id))) {
    count = sidecar->value("proposals", Json::array()).size();
  }
  return Json{{"run_id", run->id},
              {"proposal_md", *markdown},
              {"proposal_count", count},
              {"report", report.string()}};
}

Result<Json> diffTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  if (!path) {
    return std::move(path).error();
  }
  auto child = runOe(context, call, {"diff", "--experience", path->string(), "--json"}, nullptr);
  if (!child) {
    return std::move(child).error();
  }
  Json doc = lastJsonDocument(child->stdout_text);
  if (!mcp::exitedOk(child->wait_status) || doc.is_null()) {
    return makeError(childFailure("diff", *child));
  }
  return Json{{"proposals", std::move(doc)}};
}

Result<Json> initTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call, "path");
  auto chosen = call.stringArg("template", false);
  if (!path || !chosen) {
    return !path ? std::move(path).error() : std::move(chosen).error();
  }
  const std::string name = chosen->empty() ? "tool-only" : *chosen;
  auto child = runOe(context, call, {"init", path->string(), "--template", name}, nullptr);
  if (!child) {
    return std::move(child).error();
  }
  if (!mcp::exitedOk(child->wait_status)) {
    return makeError(childFailure("init", *child));
  }
  Json files = Json::array();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(*path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      files.push_back(it->path().lexically_relative(*path).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  return Json{{"experience_path", path->string()}, {"template", name}, {"files", files}};
}

// "ultra synthesize done (round 0)" per finished phase of oe ultra, as progress of the call
// (an LLM phase takes a while: the progress also keeps a client's request timeout from expiring).
std::function<void(const Json&)> phaseProgress(mcp::ToolCall& call) {
  return [&call, count = std::make_shared<int>(0)](const Json& event) {
    const std::string status = stringField(event, "status");
    if (stringField(event, "type") != "ultra.phase" || status == "start") {
      return;
    }
    *count += 1;
    call.progress(*count, std::nullopt,
                  "ultra " + event.value("phase", std::string()) + " " + status + " (round " +
                      std::to_string(event.value("round", 0)) + ")");
  };
}

// oe ultra and oe ultra-revise print their result as JSON (upstream's oe_ultra / oe_ultra_revise
// shapes) also when the draft is invalid (exit 2): that is a result, as upstream returns it.
Result<Json> ultraResult(const std::string& verb, const mcp::ChildResult& child) {
  Json doc = lastJsonDocument(child.stdout_text);
  if (!doc.is_object() || !doc.contains("draft_dir")) {
    return makeError(childFailure(verb, child));
  }
  return doc;
}

Result<Json> ultraTool(const McpContext& context, mcp::ToolCall& call) {
  auto task = call.stringArg("task", true);
  auto root_arg = call.stringArg("draft_root", false);
  if (!task || !root_arg) {
    return !task ? std::move(task).error() : std::move(root_arg).error();
  }
  auto root = context.guard.resolve(root_arg->empty() ? ".openexpertise/drafts" : *root_arg);
  if (!root) {
    return std::move(root).error();
  }
  std::vector<std::string> args = {"ultra", *task, "--draft-root", root->string(), "--json"};
  auto llm = call.stringArg("llm", false);
  if (!llm) {
    return std::move(llm).error();
  }
  if (!llm->empty()) {
    args.insert(args.end(), {"--llm", *llm});
  }
  auto child = runOe(context, call, std::move(args), phaseProgress(call));
  if (!child) {
    return std::move(child).error();
  }
  return ultraResult("ultra", *child);
}

Result<Json> ultraReviseTool(const McpContext& context, mcp::ToolCall& call) {
  auto dir = experienceArg(context, call, "draft_dir");
  auto feedback = call.stringArg("feedback", true);
  if (!dir || !feedback) {
    return !dir ? std::move(dir).error() : std::move(feedback).error();
  }
  std::vector<std::string> args = {"ultra-revise", dir->string(), *feedback, "--json"};
  if (const auto it = call.args().find("max_rounds"); it != call.args().end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return makeError("max_rounds must be an integer, 0 or more");
    }
    args.insert(args.end(), {"--max-rounds", std::to_string(it->get<int64_t>())});
  }
  auto child = runOe(context, call, std::move(args), phaseProgress(call));
  if (!child) {
    return std::move(child).error();
  }
  return ultraResult("ultra-revise", *child);
}

// oe_approvals: `oe runs --waiting --json` of the experience (a passed deadline is decided by
// its on_timeout as oe looks, docs/policy.md "Approvals").
Result<Json> approvalsTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  if (!path) {
    return std::move(path).error();
  }
  auto child = runOe(context, call, {"runs", "--waiting", "--json", "--experience", path->string()},
                     nullptr);
  if (!child) {
    return std::move(child).error();
  }
  Json doc = lastJsonDocument(child->stdout_text);
  if (!mcp::exitedOk(child->wait_status) || !doc.is_array()) {
    return makeError(childFailure("runs --waiting", *child));
  }
  return Json{{"waiting", std::move(doc)}};
}

// oe_decide: `oe approve` / `oe reject` of a parked run's node. A decision someone else made
// first is a result ({recorded: false, message}), not an error: the caller is told who did.
Result<Json> decideTool(const McpContext& context, mcp::ToolCall& call) {
  auto path = experienceArg(context, call);
  auto id = call.stringArg("run_id", true);
  auto node = call.stringArg("node", true);
  auto decision = call.stringArg("decision", true);
  auto comment = call.stringArg("comment", false);
  auto as = call.stringArg("as", false);
  for (const Result<std::string>* arg : {&id, &node, &decision, &comment, &as}) {
    if (!*arg) {
      return arg->error();
    }
  }
  if (!path) {
    return std::move(path).error();
  }
  if (*decision != "approve" && *decision != "reject") {
    return makeError("decision must be \"approve\" or \"reject\"");
  }
  std::vector<std::string> args = {*decision, *id, *node, "--experience", path->string(),
                                   "--json"};
  if (!comment->empty()) {
    args.insert(args.end(), {"--comment", *comment});
  }
  if (!as->empty()) {
    args.insert(args.end(), {"--as", *as});
  }
  const bool go_on = call.args().value("continue", true) != false;
  if (!go_on) {
    args.emplace_back("--no-continue");
  }
  auto child = runOe(context, call, std::move(args), nullptr);
  if (!child) {
    return std::move(child).error();
  }
  Json doc = lastJsonDocument(child->stdout_text);
  if (doc.is_object() && doc.contains("run_id")) {
    return Json{{"recorded", true}, {"run", std::move(doc)}};  // decided, then continued
  }
  if (mcp::exitedOk(child->wait_status)) {
    return Json{{"recorded", true}, {"message", child->stderr_tail}};
  }
  if (child->stderr_tail.find("was already") != std::string::npos) {
    return Json{{"recorded", false}, {"message", child->stderr_tail}};
  }
  return makeError(childFailure(*decision, *child));
}

struct ToolEntry {
  const char* name;
  const char* title;
  const char* description;
  const char* input_schema;  // JSON Schema, as JSON text
  bool read_only;
  bool destructive;
  Handler handler;
};

// The table tools/list returns, in this order. A new tool: one entry here and its handler above.
constexpr ToolEntry kTools[] = {
    {"oe_validate", "Validate an experience",
     "Check an experience (a folder with experience.yaml, or the yaml) without running it: every "
     "error at once with file:line:column. Returns {valid, errors?, warnings}.",
     R"({"type":"object","properties":{"experience_path":{"type":"string","description":"Experience folder or yaml file"},"strict":{"type":"boolean","description":"Treat warnings (unknown keys) as errors"}},"required":["experience_path"]})",
     true, false, validateTool},
    {"oe_state", "Read an experience's state",
     "The persisted state of an experience: {snapshot}, or {field, value} for one field, or "
     "{note} when it has not run yet.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"field":{"type":"string","description":"One field of state.schema"}},"required":["experience_path"]})",
     true, false, stateTool},
    {"oe_inspect", "Inspect a run",
     "The events of a run, parsed from its JSONL log: {run_id, events}. run_id is an id or a "
     "unique prefix; without it, the newest run.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"run_id":{"type":"string"}},"required":["experience_path"]})",
     true, false, inspectTool},
    {"oe_run", "Run an experience",
     "Run an experience to its end and return {run_id, status, final_state, nodes, failures}. "
     "Reports progress per finished node; a cancelled call interrupts the run, which oe_resume "
     "continues.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"args":{"type":"object","description":"Run-level args; they reach every node"},"llm":{"type":"string","enum":["anthropic","openai"]},"concurrency":{"type":"integer","minimum":1},"no_cache":{"type":"boolean"},"fresh":{"type":"boolean","description":"Start from an empty state"}},"required":["experience_path"]})",
     false, false, runTool},
    {"oe_evolve", "Propose improvements from a run",
     "Ask the evolution advisor for proposals from a finished run: {proposal_md, "
     "proposal_count}. Needs ANTHROPIC_API_KEY or OPENAI_API_KEY in oe mcp's environment.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"run_id":{"type":"string"},"llm":{"type":"string","enum":["anthropic","openai"]}},"required":["experience_path","run_id"]})",
     false, false, evolveTool},
    {"oe_ultra", "Draft a new experience",
     "Draft an experience from a task description with an LLM (analyze, synthesize, critique, "
     "revise); the draft is kept only when it validates and passes a smoke run. Returns {slug, "
     "draft_dir, analysis, synthesis:{file_paths, next_steps}, validation, files_written}. "
     "Reports progress per phase; needs ANTHROPIC_API_KEY or OPENAI_API_KEY in oe mcp's "
     "environment.",
     R"({"type":"object","properties":{"task":{"type":"string","description":"What the experience should do, in plain words"},"draft_root":{"type":"string","description":"Where the draft folder is created; default: .openexpertise/drafts"},"llm":{"type":"string","enum":["anthropic","openai"]}},"required":["task"]})",
     false, false, ultraTool},
    {"oe_ultra_revise", "Revise a drafted experience",
     "Revise an oe_ultra draft with feedback; the revision replaces the draft only when it "
     "validates, passes its smoke run and scores no worse. Returns {draft_dir, analysis, "
     "synthesis, validation, files_written, loop}.",
     R"({"type":"object","properties":{"draft_dir":{"type":"string"},"feedback":{"type":"string"},"max_rounds":{"type":"integer","minimum":0}},"required":["draft_dir","feedback"]})",
     false, false, ultraReviseTool},
    {"oe_graph", "Draw an experience's graph",
     "The experience's graph as a Mermaid flowchart: {mermaid}, and {html} with html: true.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"direction":{"type":"string","enum":["TD","LR"]},"html":{"type":"boolean"}},"required":["experience_path"]})",
     true, false, graphTool},
    {"oe_resume", "Resume a run",
     "Continue an interrupted, failed or partial run with its args; finished nodes replay from "
     "the cache. Without run_id, the newest run. Same result and progress as oe_run.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"run_id":{"type":"string"},"llm":{"type":"string","enum":["anthropic","openai"]},"concurrency":{"type":"integer","minimum":1},"no_cache":{"type":"boolean"}},"required":["experience_path"]})",
     false, false, resumeTool},
    {"oe_runs", "List past runs",
     "The runs of an experience, newest first: {runs:[{id, status, started_at, duration_ms, "
     "ran, cached, failed, ...}]}.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"}},"required":["experience_path"]})",
     true, false, runsTool},
    {"oe_approvals", "List the runs waiting for an approval",
     "The parked runs of an experience (status waiting) and what each waits for: {waiting:[{"
     "run_id, ..., approvals:[{node_id, prompt, show, requested_at, deadline, on_timeout, "
     "decision}]}]}. A passed deadline is decided by its on_timeout as this looks.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"}},"required":["experience_path"]})",
     true, false, approvalsTool},
    {"oe_decide", "Approve or reject a parked run's node",
     "Record a decision on the node a parked run waits for (who: `as`; when; `comment`), then "
     "continue the run (unless continue: false): {recorded: true, run?: the continued run's "
     "result}. When someone decided first: {recorded: false, message} saying who.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"},"run_id":{"type":"string"},"node":{"type":"string","description":"The question: the node, nest/child for a node of a nested experience, STAGE@PIPELINE#I for item I of a pipeline stage, BODY@LOOP#N for iteration N of a loop body, as oe_approvals lists them"},"decision":{"type":"string","enum":["approve","reject"]},"comment":{"type":"string"},"as":{"type":"string","description":"Who decides"},"continue":{"type":"boolean","description":"Continue the run after recording; default true"}},"required":["experience_path","run_id","node","decision"]})",
     false, false, decideTool},
    {"oe_init", "Create an experience",
     "Create an experience folder from a template (tool-only, agent, cli-agent, full-pipeline): "
     "{experience_path, template, files}. The folder must be new or empty.",
     R"({"type":"object","properties":{"path":{"type":"string","description":"The folder to create"},"template":{"type":"string","enum":["tool-only","agent","cli-agent","full-pipeline"]}},"required":["path"]})",
     false, false, initTool},
    {"oe_diff", "List evolution proposals",
     "The evolution proposal files of an experience (.openexpertise/evolution/), newest first.",
     R"({"type":"object","properties":{"experience_path":{"type":"string"}},"required":["experience_path"]})",
     true, false, diffTool},
};

// The experiences under a root: the root itself and folders below it, a few levels deep,
// skipping hidden folders and node_modules (an experience's own .openexpertise holds installs).
std::vector<fs::path> experiencesUnder(const fs::path& root) {
  constexpr int kMaxDepth = 3;
  constexpr size_t kMaxFound = 200;
  std::vector<fs::path> found;
  std::error_code ec;
  if (fs::is_regular_file(root / "experience.yaml", ec)) {
    found.push_back(root);
  }
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator() && found.size() < kMaxFound;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory(ec) || name.starts_with('.') || name == "node_modules") {
      it.disable_recursion_pending();
      continue;
    }
    if (it.depth() >= kMaxDepth - 1) {
      it.disable_recursion_pending();
    }
    if (fs::is_regular_file(it->path() / "experience.yaml", ec)) {
      found.push_back(it->path());
    }
  }
  return found;
}

std::vector<mcp::Resource> listResources(const McpContext& context) {
  constexpr size_t kRunsPerExperience = 50;
  std::vector<mcp::Resource> out;
  for (const auto& root : context.guard.roots()) {
    for (const auto& dir : experiencesUnder(root)) {
      const std::string encoded = percentEncode(dir.string());
      std::error_code ec;
      const fs::path yaml = dir / spec::kDefaultExperienceFile;
      if (fs::exists(spec::workspaceDir(yaml) / "state.sqlite", ec)) {
        out.push_back({"oe://state/" + encoded, dir.filename().string() + " state",
                       "The state of the experience in " + dir.string(), "application/json"});
      }
      const auto runs = listRuns(runsDir(yaml), false);
      for (size_t i = 0; i < runs.size() && i < kRunsPerExperience; ++i) {
        out.push_back(
            {"oe://runs/" + encoded + "/" + runs[i].id,
             dir.filename().string() + " run " + runs[i].id,
             "The event log (JSONL) of run " + runs[i].id + ", started " + runs[i].started_at,
             "application/x-ndjson"});
      }
    }
  }
  return out;
}

Result<mcp::ResourceText> readResource(const McpContext& context, const std::string& uri) {
  const auto bad = [&uri] {
    return makeError("Resource not found: " + uri +
                     " (oe://runs/<encoded folder>/<run-id> or oe://state/<encoded folder>; "
                     "resources/list names them)");
  };
  std::string_view rest = uri;
  const bool state = rest.starts_with("oe://state/");
  if (!state && !rest.starts_with("oe://runs/")) {
    return bad();
  }
  rest.remove_prefix(state ? 11 : 10);
  std::string run_id;
  if (!state) {
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) {
      return bad();
    }
    run_id = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
    if (run_id.empty() || run_id.find('/') != std::string::npos || run_id.starts_with('.')) {
      return bad();
    }
  }
  const auto decoded = percentDecode(rest);
  if (!decoded) {
    return bad();
  }
  auto dir = context.guard.resolve(*decoded);
  if (!dir) {
    return std::move(dir).error();
  }
  if (!state) {
    auto text = readFile(runsDir(*dir / spec::kDefaultExperienceFile) / (run_id + ".jsonl"));
    if (!text) {
      return bad();
    }
    return mcp::ResourceText{"application/x-ndjson", std::move(*text)};
  }
  auto model = loadModel(*dir);
  if (!model) {
    return std::move(model).error();
  }
  std::error_code ec;
  if (!fs::exists(run::statePath(*model), ec)) {
    return bad();
  }
  auto store = state::StateStore::open(run::statePath(*model), model->state);
  if (!store) {
    return std::move(store).error();
  }
  return mcp::ResourceText{
      "application/json", (*store)->snapshot().dump(2, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

std::vector<mcp::Tool> mcpTools(std::shared_ptr<const McpContext> context) {
  std::vector<mcp::Tool> tools;
  for (const ToolEntry& entry : kTools) {
    mcp::Tool tool;
    tool.name = entry.name;
    tool.title = entry.title;
    tool.description = entry.description;
    tool.input_schema = Json::parse(entry.input_schema);  // a literal above: a typo throws in tests
    tool.annotations = {{"readOnlyHint", entry.read_only},
                        {"destructiveHint", entry.destructive},
                        {"openWorldHint", false}};
    tool.handler = [context, handler = entry.handler](mcp::ToolCall& call) {
      return handler(*context, call);
    };
    tools.push_back(std::move(tool));
  }
  return tools;
}

mcp::Resources mcpResources(std::shared_ptr<const McpContext> context) {
  return mcp::Resources{[context] { return listResources(*context); },
                        [context](const std::string& uri) { return readResource(*context, uri); }};
}

}  // namespace oe::mcp
