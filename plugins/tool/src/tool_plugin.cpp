// The `tool` node kind (plugin dev.oe.tool): resolves a node's `impl:` to one of three flavours
// (Node.js module, executable, native library; decision D13) and runs it with the upstream
// call signature {...args, _edge_inputs, _state}.
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <oe/cpp/plugin.hpp>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "proc_kit/call_workdir.hpp"
#include "cancel_token.hpp"
#include "exec_runner.hpp"
#include "expected.hpp"
#include "native_tools.hpp"
#include "node_worker.hpp"
#include "subprocess.hpp"
#include "tool_io.hpp"

#ifndef OE_TOOL_PLUGIN_VERSION
#error "OE_TOOL_PLUGIN_VERSION must be defined by the build"
#endif

namespace oe::tool {
namespace {

constexpr const char* kSpecSchema =
    R"({"type":"object","required":["impl"],"properties":{)"
    R"("impl":{"type":"string","minLength":1,"x-oe-path":"file",)"
    R"("description":"The tool to run, relative to the )"
    R"(experience directory: a .mjs/.js/.cjs module whose default export is called in a )"
    R"(persistent Node.js worker, an executable that reads the input JSON on stdin and prints )"
    R"(the result JSON on stdout, or a shared library (.so) exporting oe_tool_invoke_v1"},)"
    R"("args":{"type":"object"}}})";

bool endsWith(std::string_view text, std::string_view suffix) { return text.ends_with(suffix); }

// Decides how `who.path` runs, or why it cannot.
Expected<Flavour> detectFlavour(const ToolIdentity& who) {
  struct stat info {};
  if (::stat(who.path.c_str(), &info) != 0) {
    return fail(OE_NOT_FOUND, "Tool impl not found: " + who.path + " (declared as \"" + who.impl +
                                  "\" in experience.yaml)");
  }
  const bool regular = S_ISREG(info.st_mode);
  if (regular &&
      (endsWith(who.path, ".mjs") || endsWith(who.path, ".js") || endsWith(who.path, ".cjs"))) {
    return Flavour::kNodeModule;
  }
  if (regular && isSharedLibrary(who.path)) {
    return Flavour::kNative;
  }
  if (isExecutableFile(who.path)) {
    return Flavour::kExecutable;
  }
  return fail(OE_FAILED_PRECONDITION,
              "Tool \"" + who.id + "\": " + who.path +
                  " is neither a .mjs/.js module, a shared library nor an executable file; chmod "
                  "+x it or use a .mjs module");
}

[[noreturn]] void raise(Failure failure) {
  throw sdk::Error(failure.status, std::move(failure.message));
}

// The general reading of the node configuration (scanNodeConfig could not vouch for it): the
// node's id and impl and the experience directory, or an error for the user.
void parseNodeConfig(std::string_view config_json, ToolIdentity& who, std::string& experience_dir,
                     std::optional<SandboxSpec>& sandbox) {
  Json config;
  try {
    config = Json::parse(config_json);
  } catch (const Json::exception& error) {
    throw sdk::Error(
        OE_INVALID_ARGUMENT,
        std::string("tool: the node configuration is not valid JSON: ") + error.what());
  }
  const Json* node = nullptr;
  if (config.is_object()) {
    if (auto it = config.find("node"); it != config.end() && it->is_object()) {
      node = &*it;
    }
  }
  if (node == nullptr) {
    throw sdk::Error(OE_INVALID_ARGUMENT, "tool: the node configuration has no \"node\" object");
  }
  if (auto it = node->find("id"); it != node->end() && it->is_string()) {
    who.id = it->get<std::string>();
  }
  auto impl = node->find("impl");
  if (impl == node->end() || !impl->is_string() || impl->get_ref<const std::string&>().empty()) {
    throw sdk::Error(OE_INVALID_ARGUMENT,
                     "Tool \"" + who.id +
                         "\" has no impl; set impl: to a .mjs module, an executable or a .so "
                         "library (relative to the experience directory)");
  }
  who.impl = impl->get<std::string>();
  if (auto it = config.find("experience_dir"); it != config.end() && it->is_string()) {
    experience_dir = it->get<std::string>();
  }
  if (auto it = config.find("sandbox"); it != config.end() && it->is_object()) {
    SandboxSpec spec;
    if (auto exe = it->find("exe"); exe != it->end() && exe->is_string()) {
      spec.exe = exe->get<std::string>();
    }
    spec.confinement = it->value("confinement", Json::object()).dump();
    sandbox = std::move(spec);
  }
}

// What a confined tool's failure says about the policy: the rule it ran into, worded for the
// user, or "" when nothing in `message` points at one. Only the kernel's own words count (an
// errno text, a signal the limits send), so a tool's unrelated failure is not blamed on policy.
std::string deniedRule(const std::string& message) {
  auto has = [&message](std::string_view text) { return message.find(text) != std::string::npos; };
  if (has("oe-sandbox: cannot enforce")) {
    return "enforce";
  }
  if (has("EACCES") || has("ermission denied") || has("EPERM") || has("Operation not permitted") ||
      has("EROFS") || has("Read-only file system")) {
    return "fs";
  }
  if (has("ECONNREFUSED") || has("ENETUNREACH") || has("Network is unreachable") ||
      has("EAI_AGAIN") || has("ENOTFOUND") || has("Connection refused") ||
      has("Temporary failure in name resolution") || has("403 Forbidden")) {
    return "network";
  }
  if (has("SIGXCPU")) {
    return "limits.cpu_seconds";
  }
  if (has("SIGXFSZ") || has("EFBIG") || has("File too large")) {
    return "limits.file_size_mb";
  }
  if (has("ENOMEM") || has("Cannot allocate memory") || has("out of memory") ||
      has("heap out of memory")) {
    return "limits.memory_mb";
  }
  if (has("EAGAIN") || has("Resource temporarily unavailable")) {
    return "limits.processes";
  }
  if (has("EMFILE") || has("Too many open files")) {
    return "limits.open_files";
  }
  return "";
}

}  // namespace

class ToolPlugin;

// One `kind: tool` node. invoke is reentrant: for_each iterations and parallel branches may
// call it at the same time, each with its own call context.
class ToolNode final : public sdk::Node {
 public:
  ToolNode(ToolPlugin& plugin, ToolIdentity who, Flavour flavour, std::string experience_dir,
           oe_tool_invoke_fn native_entry, std::optional<SandboxSpec> sandbox)
      : plugin_(plugin),
        who_(std::move(who)),
        flavour_(flavour),
        experience_dir_(std::move(experience_dir)),
        native_entry_(native_entry),
        sandbox_(std::move(sandbox)) {}

  void invoke(sdk::Call& call) override;

  void cancel(oe_host_ctx* call) noexcept override { calls_.cancel(call); }

 private:
  Expected<std::string> run(sdk::Call& call, std::string_view input, CancelToken& token);
  Expected<std::string> runUnchecked(sdk::Call& call, std::string_view input, CancelToken& token);
  // The policy's part of a confined tool's failure: policy.denied, and the rule in the message.
  Failure explainDenial(sdk::Call& call, Failure failure) const;

  ToolPlugin& plugin_;
  ToolIdentity who_;
  Flavour flavour_;
  std::string experience_dir_;
  oe_tool_invoke_fn native_entry_;
  std::optional<SandboxSpec> sandbox_;  // set when a policy is in force for the node
  prockit::CallRegistry calls_;         // the running invocations, for cancel()
};

// Library-wide state: the one Node.js worker and the loaded native libraries.
class ToolPlugin {
 public:
  explicit ToolPlugin(sdk::Host host)
      : node_worker_([host](std::string_view line) {
          host.log(OE_LOG_INFO, "tool worker (node): " + std::string(line));
        }),
        native_tools_(host.api()) {}

  static constexpr std::span<const sdk::KindSpec<ToolPlugin>> kinds();

  [[nodiscard]] NodeWorker& nodeWorker() noexcept { return node_worker_; }
  [[nodiscard]] NativeTools& nativeTools() noexcept { return native_tools_; }

  static std::unique_ptr<sdk::Node> create(ToolPlugin& plugin, std::string_view config_json);

 private:
  // How an impl path runs, decided once per path: the host creates a node per graph node, and
  // detecting the flavour (stat, ELF check, dlopen + dlsym, a PATH search for node) cost more
  // than the call of a native tool. Only successes are kept: a tool missing at one node's
  // creation may be written by an earlier node before the next one is created.
  struct Resolved {
    std::string path;  // absolute, normalised
    Flavour flavour = Flavour::kExecutable;
    oe_tool_invoke_fn native_entry = nullptr;
  };
  // `who.impl` relative to `base` (the experience directory) unless absolute.
  Expected<Resolved> resolve(const ToolIdentity& who, const std::filesystem::path& base);

  NodeWorker node_worker_;
  NativeTools native_tools_;
  std::mutex resolved_mutex_;
  std::unordered_map<std::string, Resolved> resolved_;  // "<base>\n<impl>" -> how it runs
};

void ToolNode::invoke(sdk::Call& call) {
  CancelToken token([&call] { return call.cancelled(); });
  prockit::CallRegistry::Scope active(calls_, call.context(), token);
  auto input = buildToolInput(call.request(), who_);
  if (!input) {
    raise(std::move(input).failure());
  }
  auto response = run(call, *input, token);
  if (!response) {
    raise(std::move(response).failure());
  }
  call.respond(*response);
}

Expected<std::string> ToolNode::run(sdk::Call& call, std::string_view input, CancelToken& token) {
  auto response = runUnchecked(call, input, token);
  if (!response && sandbox_ && response.failure().status != OE_CANCELLED) {
    return explainDenial(call, std::move(response).failure());
  }
  return response;
}

Failure ToolNode::explainDenial(sdk::Call& call, Failure failure) const {
  const std::string rule = deniedRule(failure.message);
  if (rule.empty()) {
    return failure;
  }
  const Json confinement = Json::parse(sandbox_->confinement, nullptr, false);
  std::string detail;
  if (rule == "fs" && confinement.contains("fs")) {
    std::string roots;
    for (const auto& root : confinement["fs"].value("write", Json::array())) {
      const std::string path = root.is_string() ? root.get<std::string>() : std::string();
      if (!path.empty() && path.rfind("/dev/", 0) != 0) {
        roots += (roots.empty() ? "" : ", ") + path;
      }
    }
    detail = "; it may write only in " + (roots.empty() ? std::string("no folder") : roots) +
             ", read what fs.read lists, and never change .git or .openexpertise";
  } else if (rule == "network" && confinement.contains("network")) {
    detail = "; network mode " + confinement["network"].value("mode", std::string("full"));
  }
  Json fields = {{"rule", rule}, {"message", failure.message.substr(0, 512)}};
  call.emitEvent("policy.denied", fields.dump());
  failure.message += " [refused by the node's policy: " + rule + detail +
                     " (docs/policy.md); widen the policy if the tool needs it]";
  return failure;
}

Expected<std::string> ToolNode::runUnchecked(sdk::Call& call, std::string_view input,
                                             CancelToken& token) {
  switch (flavour_) {
    case Flavour::kNodeModule: {
      // `workspace: worktree`: the attempt's worktree copy of the experience folder.
      auto workdir = prockit::callWorkdir(call.request());
      if (sandbox_ || workdir) {
        // A worker of its own per call: its $TMP is the attempt's, its cwd the attempt's
        // worktree, and nothing one call leaves in the worker (a chdir, a global) reaches
        // another.
        NodeWorker own(
            [&call](std::string_view line) {
              call.log(OE_LOG_INFO, "tool worker (node): " + std::string(line));
            },
            sandbox_, workdir.value_or(std::string()));
        return own.call(who_, input, token);
      }
      return plugin_.nodeWorker().call(who_, input, token);
    }
    case Flavour::kExecutable: {
      // `workspace: worktree`: the attempt's worktree copy of the experience folder.
      const auto workdir = prockit::callWorkdir(call.request());
      auto outcome = runExecutable(who_, workdir.value_or(experience_dir_), input, token, sandbox_);
      if (!outcome) {
        return std::move(outcome).failure();
      }
      if (!outcome->stderr_tail.empty()) {
        call.log(OE_LOG_INFO, who_.impl + " (stderr): " + outcome->stderr_tail);
      }
      return std::move(outcome->response);
    }
    case Flavour::kNative: {
      // In-process code is not interrupted: the tool polls is_cancelled on its call context.
      if (token.requested()) {
        return fail(OE_CANCELLED, "cancelled");
      }
      if (sandbox_) {
        // A .so runs inside oe: no kernel mechanism can confine it apart from oe itself.
        const bool required =
            Json::parse(sandbox_->confinement, nullptr, false).value("enforce", "required") !=
            std::string("best_effort");
        if (required) {
          return fail(OE_FAILED_PRECONDITION,
                      "Tool \"" + who_.id + "\" (" + who_.impl +
                          ") is a native library: it runs inside oe, where its policy cannot be "
                          "enforced; build it as an executable, or set the node's policy to "
                          "enforce: best_effort");
        }
        call.log(OE_LOG_WARN, "oe-sandbox: not enforced: the whole policy (" + who_.impl +
                                  " is a native library and runs inside oe)");
      }
      auto response = plugin_.nativeTools().call(native_entry_, who_, call.context(), input);
      if (!response && response.failure().status == OE_CANCELLED && token.requested()) {
        // The tool stopped because it was asked to: reported like every other flavour's cancel.
        return fail(OE_CANCELLED, "cancelled");
      }
      return response;
    }
    default:
      return fail(OE_INTERNAL, "Tool \"" + who_.id + "\": unknown tool flavour");
  }
}

std::unique_ptr<sdk::Node> ToolPlugin::create(ToolPlugin& plugin, std::string_view config_json) {
  ToolIdentity who;
  std::string experience_dir;
  std::optional<SandboxSpec> sandbox;
  if (auto scanned = scanNodeConfig(config_json)) {
    who.id = std::move(scanned->id);
    who.impl = std::move(scanned->impl);
    experience_dir = std::move(scanned->experience_dir);
  } else {
    parseNodeConfig(config_json, who, experience_dir, sandbox);
  }

  namespace fs = std::filesystem;
  std::error_code ignored;
  fs::path base = experience_dir.empty() ? fs::current_path(ignored) : fs::path(experience_dir);
  if (experience_dir.empty()) {
    experience_dir = base.string();
  }
  auto resolved = plugin.resolve(who, base);
  if (!resolved) {
    raise(std::move(resolved).failure());
  }
  who.path = resolved->path;
  return std::make_unique<ToolNode>(plugin, std::move(who), resolved->flavour,
                                    std::move(experience_dir), resolved->native_entry,
                                    std::move(sandbox));
}

Expected<ToolPlugin::Resolved> ToolPlugin::resolve(const ToolIdentity& declared,
                                                   const std::filesystem::path& base) {
  std::string key = base.string();
  key += '\n';
  key += declared.impl;
  {
    std::lock_guard lock(resolved_mutex_);
    if (auto it = resolved_.find(key); it != resolved_.end()) {
      return it->second;
    }
  }
  ToolIdentity who = declared;
  const std::filesystem::path impl(who.impl);
  who.path = (impl.is_absolute() ? impl : base / impl).lexically_normal().string();
  auto flavour = detectFlavour(who);
  if (!flavour) {
    return std::move(flavour).failure();
  }
  Resolved resolved{who.path, *flavour, nullptr};
  if (*flavour == Flavour::kNodeModule) {
    // Fail at creation, not at the first call, when Node.js is missing.
    auto binary = NodeWorker::locateNode(who);
    if (!binary) {
      return std::move(binary).failure();
    }
  } else if (*flavour == Flavour::kNative) {
    auto entry = native_tools_.load(who);
    if (!entry) {
      return std::move(entry).failure();
    }
    resolved.native_entry = *entry;
  }
  std::lock_guard lock(resolved_mutex_);
  resolved_.emplace(std::move(key), resolved);
  return resolved;
}

namespace {
constexpr sdk::KindSpec<ToolPlugin> kKinds[] = {
    {"tool",
     "Runs a tool: a Node.js module's default export, an executable speaking JSON on "
     "stdin/stdout, or a native shared library",
     kSpecSchema, OE_NODE_KIND_REENTRANT, &ToolPlugin::create},
};
}  // namespace

constexpr std::span<const sdk::KindSpec<ToolPlugin>> ToolPlugin::kinds() { return kKinds; }

}  // namespace oe::tool

OE_SDK_PLUGIN(oe::tool::ToolPlugin, "dev.oe.tool", OE_TOOL_PLUGIN_VERSION,
              "The tool node kind: Node.js modules, executables and native libraries")
