// The MCP server: dispatch, negotiation, tool calls on their own threads, progress and
// cancellation (docs/mcp.md).
#include "oe/mcp/server.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace oe::mcp {
namespace {

constexpr size_t kMaxCallsInFlight = 32;
constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
// How long a 2026-07-28 client may cache a list result. The tables never change while the
// server runs, but a new `oe` binary may bring other tools: an hour, private to this client.
constexpr int64_t kListTtlMs = 3600 * 1000;

bool isLegacyVersion(std::string_view version) {
  return std::find(std::begin(kLegacyVersions), std::end(kLegacyVersions), version) !=
         std::end(kLegacyVersions);
}

Json supportedVersions() {
  Json all = Json::array({std::string(kModernVersion)});
  for (const auto v : kLegacyVersions) {
    all.push_back(std::string(v));
  }
  return all;
}

// The 2026-07-28 revision marks every result complete (no task, no input request pending).
Json finishResult(Json result, bool modern) {
  if (modern) {
    result["resultType"] = "complete";
  }
  return result;
}

// The 2026-07-28 revision requires cache hints on the results of the listing and reading
// methods (tools/list, resources/list, resources/templates/list, resources/read,
// server/discover): how long the client may reuse it, and for whom.
Json cacheable(Json result, bool modern, int64_t ttl_ms) {
  if (modern) {
    result["ttlMs"] = ttl_ms;
    result["cacheScope"] = "private";
  }
  return result;
}

Json toolResult(const std::string& name, const Result<Json>& value) {
  if (!value) {
    return Json{
        {"content", Json::array({{{"type", "text"},
                                  {"text", "error in " + name + ": " + value.error().message}}})},
        {"isError", true}};
  }
  Json structured = value->is_object() ? *value : Json{{"result", *value}};
  return Json{
      {"content",
       Json::array({{{"type", "text"},
                     {"text", value->dump(2, ' ', false, Json::error_handler_t::replace)}}})},
      {"structuredContent", std::move(structured)}};
}

}  // namespace

ToolCall::ToolCall(Json args, Json progress_token, std::chrono::milliseconds progress_interval,
                   LineWriter& out)
    : args_(std::move(args)),
      progress_token_(std::move(progress_token)),
      interval_(progress_interval),
      out_(out) {}

Result<std::string> ToolCall::stringArg(std::string_view name, bool required) const {
  const auto it = args_.find(name);
  if (it == args_.end() || it->is_null()) {
    if (required) {
      return makeError("missing required argument \"" + std::string(name) + "\"");
    }
    return std::string();
  }
  if (!it->is_string()) {
    return makeError("argument \"" + std::string(name) + "\" must be a string, not " +
                     it->type_name());
  }
  return it->get<std::string>();
}

void ToolCall::progress(double progress, std::optional<double> total, const std::string& message) {
  if (progress_token_.is_null()) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(progress_mutex_);
  // The spec requires progress to grow with every notification; the last one always goes out
  // so that the client sees the run reach its total.
  const bool last = total && progress >= *total;
  if (progress <= last_progress_ || (!last && now - last_sent_ < interval_)) {
    return;
  }
  Json params = {{"progressToken", progress_token_}, {"progress", progress}};
  if (total) {
    params["total"] = *total;
  }
  if (!message.empty()) {
    params["message"] = message;
  }
  last_progress_ = progress;
  last_sent_ = now;
  out_.write(notificationMessage("notifications/progress", std::move(params)));
}

struct Server::Call {
  Json id;
  std::string key;
  bool modern = false;
  std::atomic<bool> cancelled{false};
  std::unique_ptr<ToolCall> call;
  std::thread thread;
};

Server::Server(ServerInfo info, std::vector<Tool> tools, Resources resources, LineWriter& out)
    : info_(std::move(info)),
      tools_(std::move(tools)),
      resources_(std::move(resources)),
      out_(out) {
  for (size_t i = 0; i < tools_.size(); ++i) {
    tool_index_.emplace(tools_[i].name, i);
  }
}

Server::~Server() { shutdown(); }

int Server::serve(LineReader& in) {
  bool overlong = false;
  while (auto line = in.next(overlong)) {
    if (overlong) {
      out_.write(errorMessage(nullptr, kInvalidRequest, "Invalid Request: a line was too long"));
    }
    handleLine(*line);
  }
  shutdown();
  return 0;
}

void Server::handleLine(std::string_view line) {
  reapFinished();
  try {
    Parsed parsed = parseMessage(line);
    if (parsed.error) {
      out_.write(errorMessage(parsed.error->id, parsed.error->code, parsed.error->message));
      return;
    }
    if (parsed.message) {
      dispatch(*parsed.message);
    }
  } catch (const std::exception& e) {
    // Not expected (handlers report errors as values); a bug must not end the session.
    out_.write(errorMessage(nullptr, kInternalError, std::string("Internal error: ") + e.what()));
  }
}

void Server::dispatch(const Message& message) {
  if (message.kind == Message::Kind::kResponse) {
    return;  // this server sends no requests; a stray response is ignored
  }
  if (message.kind == Message::Kind::kNotification) {
    if (message.method == "notifications/cancelled") {
      cancelCall(message.params);
    }
    // notifications/initialized, roots/list_changed, progress, ...: nothing to do.
    return;
  }
  bool deferred = false;
  std::optional<Json> reply = answer(message, deferred);
  if (!deferred && reply) {
    out_.write(*reply);
  }
}

std::optional<Json> Server::answer(const Message& message, bool& deferred) {
  const Json& params = message.params;
  bool modern = false;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (const auto version = meta->find(kMetaVersion); version != meta->end()) {
      const bool known = version->is_string() && (version->get<std::string>() == kModernVersion ||
                                                  isLegacyVersion(version->get<std::string>()));
      if (!known) {
        return errorMessage(message.id, kUnsupportedProtocolVersion,
                            "Unsupported protocol version " + version->dump(),
                            Json{{"supported", supportedVersions()}, {"requested", *version}});
      }
      modern = version->get<std::string>() == kModernVersion;
    }
  }
  const std::string& method = message.method;
  if (method == "initialize") {
    return resultMessage(message.id, initializeResult(params));
  }
  if (method == "server/discover") {
    return resultMessage(message.id, discoverResult());
  }
  if (method == "ping") {
    return resultMessage(message.id, finishResult(Json::object(), modern));
  }
  if (method == "tools/list") {
    return resultMessage(message.id,
                         finishResult(cacheable(toolsListResult(), modern, kListTtlMs), modern));
  }
  if (method == "tools/call") {
    Json error;
    if (auto immediate = startToolCall(message, error)) {
      return resultMessage(message.id, finishResult(std::move(*immediate), modern));
    }
    if (!error.is_null()) {
      return error;
    }
    deferred = true;
    return std::nullopt;
  }
  if (method == "resources/list" || method == "resources/templates/list") {
    const bool templates = method == "resources/templates/list";
    Json list = Json::array();
    if (!templates && resources_.list) {
      for (const auto& r : resources_.list()) {
        Json entry = {{"uri", r.uri}, {"name", r.name}, {"mimeType", r.mime_type}};
        if (!r.description.empty()) {
          entry["description"] = r.description;
        }
        list.push_back(std::move(entry));
      }
    }
    // Run logs come and go, and grow while a run is on: never cached.
    Json result = {{templates ? "resourceTemplates" : "resources", std::move(list)}};
    return resultMessage(message.id, finishResult(cacheable(std::move(result), modern, 0), modern));
  }
  if (method == "resources/read") {
    const auto uri = params.find("uri");
    if (uri == params.end() || !uri->is_string()) {
      return errorMessage(message.id, kInvalidParams, "Invalid params: uri must be a string");
    }
    if (!resources_.read) {
      return errorMessage(message.id, kResourceNotFound, "Resource not found: " + uri->dump());
    }
    auto text = resources_.read(uri->get<std::string>());
    if (!text) {
      return errorMessage(message.id, kResourceNotFound, text.error().message, Json{{"uri", *uri}});
    }
    Json content = {{"uri", *uri}, {"mimeType", text->mime_type}, {"text", text->text}};
    return resultMessage(
        message.id,
        finishResult(cacheable(Json{{"contents", Json::array({content})}}, modern, 0), modern));
  }
  return errorMessage(message.id, kMethodNotFound, "Method not found: " + method);
}

Json Server::capabilities() const {
  Json caps = {{"tools", {{"listChanged", false}}}};
  if (resources_.list) {
    caps["resources"] = {{"listChanged", false}, {"subscribe", false}};
  }
  return caps;
}

Json Server::initializeResult(const Json& params) {
  std::string version(kLegacyVersions[0]);
  if (const auto requested = params.find("protocolVersion");
      requested != params.end() && requested->is_string() &&
      isLegacyVersion(requested->get<std::string>())) {
    version = requested->get<std::string>();
  }
  Json result = {{"protocolVersion", version},
                 {"capabilities", capabilities()},
                 {"serverInfo", {{"name", info_.name}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) {
    result["instructions"] = info_.instructions;
  }
  return result;
}

Json Server::discoverResult() const {
  Json result = {{"supportedVersions", Json::array({std::string(kModernVersion)})},
                 {"capabilities", capabilities()},
                 {"_meta",
                  {{"io.modelcontextprotocol/serverInfo",
                    {{"name", info_.name}, {"version", info_.version}}}}},
                 {"resultType", "complete"}};
  result = cacheable(std::move(result), true, 0);
  if (!info_.instructions.empty()) {
    result["instructions"] = info_.instructions;
  }
  return result;
}

Json Server::toolsListResult() const {
  Json tools = Json::array();
  for (const auto& tool : tools_) {
    Json entry = {
        {"name", tool.name}, {"description", tool.description}, {"inputSchema", tool.input_schema}};
    if (!tool.title.empty()) {
      entry["title"] = tool.title;
    }
    if (!tool.annotations.is_null()) {
      entry["annotations"] = tool.annotations;
    }
    tools.push_back(std::move(entry));
  }
  return Json{{"tools", std::move(tools)}};
}

std::optional<Json> Server::startToolCall(const Message& message, Json& error) {
  const Json& params = message.params;
  const auto name_it = params.find("name");
  if (name_it == params.end() || !name_it->is_string()) {
    error = errorMessage(message.id, kInvalidParams, "Invalid params: name must be a string");
    return std::nullopt;
  }
  const std::string name = name_it->get<std::string>();
  Json args = params.value("arguments", Json::object());
  if (args.is_null()) {
    args = Json::object();
  }
  if (!args.is_object()) {
    error = errorMessage(message.id, kInvalidParams, "Invalid params: arguments must be an object");
    return std::nullopt;
  }
  const auto tool_it = tool_index_.find(name);
  if (tool_it == tool_index_.end()) {
    // Upstream's answer (a tool result, not a protocol error), which models can read and act on.
    return Json{{"content", Json::array({{{"type", "text"}, {"text", "unknown tool: " + name}}})},
                {"isError", true}};
  }
  Json progress_token;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    progress_token = meta->value("progressToken", Json());
  }
  const bool modern =
      params.contains("_meta") && params["_meta"].is_object() &&
      params["_meta"].value(std::string(kMetaVersion), Json()) == std::string(kModernVersion);
  auto call = std::make_shared<Call>();
  call->id = message.id;
  call->key = message.id.dump();
  call->modern = modern;
  call->call = std::make_unique<ToolCall>(std::move(args), std::move(progress_token),
                                          info_.progress_interval, out_);
  {
    std::lock_guard lock(calls_mutex_);
    if (shutting_down_) {
      error = errorMessage(message.id, kInternalError, "the server is shutting down");
      return std::nullopt;
    }
    if (active_.size() >= kMaxCallsInFlight) {
      error = errorMessage(message.id, kInternalError,
                           "too many tool calls in flight (" + std::to_string(kMaxCallsInFlight) +
                               "); wait for one to finish");
      return std::nullopt;
    }
    if (!active_.emplace(call->key, call).second) {
      error = errorMessage(message.id, kInvalidRequest,
                           "Invalid Request: request id " + call->key + " is already in use");
      return std::nullopt;
    }
    const Tool& tool = tools_[tool_it->second];
    // Started under the lock, so that the thread's own removal from active_ comes after it is
    // stored in call->thread.
    call->thread = std::thread([this, call, &tool] {
      Result<Json> value = makeError("the call was not run");
      try {
        value = tool.handler(*call->call);
      } catch (const std::exception& e) {
        value = makeError(std::string("internal error: ") + e.what());
      } catch (...) {
        value = makeError("internal error");
      }
      bool cancelled = false;
      {
        std::lock_guard done_lock(calls_mutex_);
        active_.erase(call->key);
        finished_.push_back(call);  // joined by the next reapFinished(), which waits for the
        cancelled = call->cancelled.load();  // write below
        call_ended_.notify_all();
      }
      // A cancelled request gets no response (spec: basic/utilities/cancellation). A cancel
      // that arrives from here on finds no call and is ignored, as the spec allows.
      if (!cancelled) {
        out_.write(
            resultMessage(call->id, finishResult(toolResult(tool.name, value), call->modern)));
      }
    });
  }
  return std::nullopt;
}

void Server::cancelCall(const Json& params) {
  const auto id = params.find("requestId");
  if (id == params.end() || !(id->is_string() || id->is_number_integer())) {
    return;
  }
  std::shared_ptr<Call> call;
  {
    std::lock_guard lock(calls_mutex_);
    const auto it = active_.find(id->dump());
    if (it == active_.end()) {
      return;  // finished already, or never a tool call: nothing to cancel (spec: ignore it)
    }
    call = it->second;
    call->cancelled.store(true);
  }
  call->call->cancel().cancel();
}

void Server::reapFinished() {
  std::vector<std::shared_ptr<Call>> done;
  {
    std::lock_guard lock(calls_mutex_);
    done.swap(finished_);
  }
  for (auto& call : done) {
    if (call->thread.joinable()) {
      call->thread.join();
    }
  }
}

void Server::shutdown() {
  std::vector<std::shared_ptr<Call>> running;
  {
    std::lock_guard lock(calls_mutex_);
    shutting_down_ = true;
    for (auto& [key, call] : active_) {
      call->cancelled.store(true);
      running.push_back(call);
    }
  }
  for (auto& call : running) {
    call->call->cancel().cancel();
  }
  {
    // Each thread is joined once, by whoever takes it from finished_ (reapFinished).
    std::unique_lock lock(calls_mutex_);
    call_ended_.wait(lock, [this] { return active_.empty(); });
  }
  reapFinished();
}

size_t Server::callsInFlight() const {
  std::lock_guard lock(calls_mutex_);
  return active_.size();
}

}  // namespace oe::mcp
