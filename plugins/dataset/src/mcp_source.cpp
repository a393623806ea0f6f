// source.type mcp-resource (reference §6.4): the server named in <experience>/mcp.json is
// started over stdio, the resource is read with resources/read, and its contents become rows
// as upstream normalises them. mcp.json is read at every invoke, like a file source.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "mcp_client.hpp"
#include "mcp_protocol.hpp"
#include "sources.hpp"

namespace oe::dataset {
namespace {

using std::chrono::milliseconds;

struct Declared {
  McpServerLaunch launch;
  std::string shown;  // "command arg ...", for "check that ... runs standalone"
};

Expected<Declared> declaredServer(const McpResourceSource& source, const std::string& node_id,
                                  const std::string& config_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(config_path, ec)) {
    return fail(OE_NOT_FOUND,
                "mcp-resource source on node \"" + node_id + "\" requires `mcp.json` at " +
                    config_path +
                    " to map server names to spawn commands. Create it with shape { \"servers\": "
                    "{ \"<name>\": { \"command\": \"...\", \"args\": [...] } } }.");
  }
  std::ifstream in(config_path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  OrderedJson config;  // ordered: the available servers are listed as declared, as upstream
  try {
    config = OrderedJson::parse(withoutBom(text));
  } catch (const nlohmann::json::parse_error& error) {
    return fail(OE_INVALID_ARGUMENT,
                "Could not parse " + config_path + ": " + parseProblem(error, true));
  }
  const auto servers = config.is_object() ? config.find("servers") : config.end();
  if (servers == config.end() || !servers->is_object()) {
    return fail(OE_INVALID_ARGUMENT,
                config_path + " is missing a `servers` object at the top level.");
  }
  const auto entry = servers->find(source.server);
  if (entry == servers->end()) {
    std::string available;
    for (const auto& [name, ignored] : servers->items()) {
      available += (available.empty() ? "" : ", ") + name;
    }
    return fail(OE_NOT_FOUND,
                "MCP server \"" + source.server + "\" referenced by node \"" + node_id +
                    "\" is not declared in " + config_path +
                    ". Available servers: " + (available.empty() ? "(none)" : available) +
                    ". Add it under the `servers` object.");
  }
  const std::string where = config_path + ": servers." + source.server;
  const auto command = entry->is_object() ? entry->find("command") : entry->end();
  if (command == entry->end() || !command->is_string() || command->get<std::string>().empty()) {
    return fail(OE_INVALID_ARGUMENT,
                where + " needs a \"command\" string (the program that serves MCP over stdio)");
  }
  Declared out;
  out.launch.command = command->get<std::string>();
  out.launch.cwd = source.experience_dir;
  if (source.sandbox) {
    out.launch.sandbox = prockit::SandboxSpec{source.sandbox->first, source.sandbox->second};
  }
  out.shown = out.launch.command;
  if (auto args = entry->find("args"); args != entry->end() && !args->is_null()) {
    if (!args->is_array()) {
      return fail(OE_INVALID_ARGUMENT, where + ".args must be an array of strings");
    }
    for (const OrderedJson& arg : *args) {
      if (!arg.is_string()) {
        return fail(OE_INVALID_ARGUMENT,
                    where + ".args must be an array of strings; got " + arg.dump());
      }
      out.launch.args.push_back(arg.get<std::string>());
      out.shown += " " + out.launch.args.back();
    }
  }
  if (auto env = entry->find("env"); env != entry->end() && !env->is_null()) {
    if (!env->is_object()) {
      return fail(OE_INVALID_ARGUMENT, where + ".env must be an object of names to strings");
    }
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string() || name.empty() || name.find('=') != std::string::npos) {
        return fail(OE_INVALID_ARGUMENT,
                    where + ".env." + name + " must be a string (and its name must have no '=')");
      }
      out.launch.env.push_back(name + "=" + value.get<std::string>());
    }
  }
  return out;
}

}  // namespace

Expected<std::string> readMcpResourceSource(const McpResourceSource& source,
                                            const std::string& node_id,
                                            std::string_view client_version,
                                            const CancelCheck& cancelled) {
  const std::string config_path =
      (std::filesystem::path(source.experience_dir) / "mcp.json").lexically_normal().string();
  auto declared = declaredServer(source, node_id, config_path);
  if (!declared) {
    return std::move(declared).failure();
  }
  const std::string server = "MCP server \"" + source.server + "\"";
  const std::string declared_in = " (declared in " + config_path + ")";
  prockit::CancelToken token(cancelled);
  const milliseconds timeout(source.timeout_ms);
  auto client = McpClient::connect(declared->launch, client_version, timeout, token);
  if (!client) {
    if (client.failure().status == OE_CANCELLED) {
      return std::move(client).failure();
    }
    return fail(client.failure().status, server + " failed to start: " + client.failure().message +
                                             ". Check that `" + declared->shown +
                                             "` runs standalone" + declared_in + ".");
  }
  auto result = (*client)->request("resources/read", {{"uri", source.uri}}, timeout);
  if (!result) {
    if (result.failure().status == OE_CANCELLED) {
      return std::move(result).failure();
    }
    return fail(result.failure().status,
                server + " failed to read resource \"" + source.uri +
                    "\": " + result.failure().message +
                    ". Check the URI is correct and the server has access" + declared_in + ".");
  }
  const auto contents = result->is_object() ? result->find("contents") : result->end();
  if (contents == result->end() || !contents->is_array()) {
    return fail(OE_FAILED_PRECONDITION,
                server + " returned non-array `contents` for \"" + source.uri +
                    "\". Expected MCP v1 resources/read response shape" + declared_in + ".");
  }
  return mcpContentsToRows(*contents).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace oe::dataset
