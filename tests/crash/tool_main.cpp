// oe_crash_tool: the executable flavour of the crash harness's tool (the .mjs flavour is in
// case_gen.cpp; both compute the same kind of function). A generated experience runs it through
// tools/crash_tool, a `#!/bin/sh` wrapper that passes, as argv[1], the folder of the exec.log
// and markers/ it uses (its experience's, or the parent's for a nested experience).
//
// stdin: {..args, _state, _edge_inputs}; stdout: {state_delta, edge_output}. The args:
//   id  the node (or `<experience node>.<child node>`)      w  {field: write mode}
//   s   sleep ms before answering                            f  1: fail the first attempt
//   e   predecessors whose edge_output is hashed             o  1: hash arrays sorted
//   q   1: return no edge_output
// plus the injected $item, $index, $pipeline, $iter. Each successful execution appends
// "<identity> <parent pid>" to exec.log (the .mjs flavour's parent is the Node.js worker's, oe).
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;

std::string canon(const Json& value, bool sort) {
  if (value.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : value) {
      items.push_back(canon(item, sort));
    }
    if (sort) {
      std::sort(items.begin(), items.end());
    }
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i == 0 ? "" : ",") + items[i];
    }
    return out + "]";
  }
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [key, item] : value.items()) {  // nlohmann's object keeps keys sorted
      out += (first ? "" : ",") + Json(key).dump() + ":" + canon(item, sort);
      first = false;
    }
    return out + "}";
  }
  return value.dump();
}

uint32_t fnv(const std::string& text) {
  uint32_t h = 0x811c9dc5U;
  for (unsigned char c : text) {
    h = (h ^ c) * 0x01000193U;
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "oe_crash_tool: run me through a generated tools/crash_tool wrapper\n";
    return 2;
  }
  // Where exec.log and markers/ are: $OE_CRASH_LOG_DIR when the harness sets it (off the
  // experience's file system, which its disk-full fault fills), else the wrapper's choice.
  const char* log_dir = std::getenv("OE_CRASH_LOG_DIR");
  const std::filesystem::path root = log_dir != nullptr && *log_dir != '\0' ? log_dir : argv[1];
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  Json input = Json::parse(text, nullptr, false);
  if (!input.is_object()) {
    std::cerr << "oe_crash_tool: stdin is not a JSON object\n";
    return 2;
  }
  const Json state = input.value("_state", Json::object());
  const Json edge_inputs = input.value("_edge_inputs", Json::object());
  Json args = input;
  args.erase("_state");
  args.erase("_edge_inputs");

  std::string ident = args.value("id", "");
  if (args.contains("$index")) {
    ident += "#" + args["$index"].dump();
  }
  if (args.contains("$pipeline")) {
    ident += "@" + args["$pipeline"].get<std::string>();
  }
  if (args.contains("$iter")) {
    ident += "~" + args["$iter"].dump();
  }
  Json edges = Json::object();
  const Json hashed = args.value("e", Json::array());
  for (const auto& e : hashed) {
    const std::string from = e.is_string() ? e.get<std::string>() : e.dump();
    if (edge_inputs.contains(from)) {
      edges[from] = edge_inputs[from];
    }
  }
  const uint32_t hash = fnv(canon(Json{{"a", args}, {"s", state}, {"e", edges}},
                                  args.value("o", 0) == 1));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", hash);

  if (args.value("f", 0) == 1) {
    const auto marker = root / "markers" / ident;
    if (!std::filesystem::exists(marker)) {
      std::filesystem::create_directories(marker.parent_path());
      std::ofstream(marker).flush();
      std::cerr << ident << " fails its first attempt\n";
      return 1;
    }
  }
  if (const int sleep_ms = args.value("s", 0); sleep_ms > 0) {
    const timespec pause{sleep_ms / 1000, static_cast<long>(sleep_ms % 1000) * 1000000L};
    nanosleep(&pause, nullptr);
  }
  Json delta = Json::object();
  const Json writes = args.value("w", Json::object());  // items() must not outlive it
  for (const auto& [field, mode_json] : writes.items()) {
    const std::string mode = mode_json.get<std::string>();
    if (mode == "item") {
      delta[field] = Json::array({ident + ":" + hex});
    } else if (mode == "value") {
      delta[field] = ident + ":" + hex;
    } else if (mode == "number") {
      delta[field] = hash % 100;
    } else if (mode == "const") {
      delta[field] = "once:" + field;
    } else if (mode == "count") {
      const Json& now = state.contains(field) ? state[field] : Json(0);
      delta[field] = (now.is_number() ? now.get<int64_t>() : 0) + 1;
    } else if (mode.rfind("list:", 0) == 0) {
      const uint32_t n = 1 + hash % static_cast<uint32_t>(std::stoi(mode.substr(5)));
      Json list = Json::array();
      for (uint32_t k = 0; k < n; ++k) {
        list.push_back(ident + "." + std::to_string(k));
      }
      delta[field] = std::move(list);
    } else if (mode.rfind("blob:", 0) == 0) {
      delta[field] = std::string(static_cast<size_t>(std::stoi(mode.substr(5))), 'x');
    }
  }
  {
    std::ofstream log(root / "exec.log", std::ios::app);
    log << ident << ' ' << getppid() << '\n';  // the oe process that ran it (1 once orphaned)
  }
  Json out = {{"state_delta", delta}};
  if (args.value("q", 0) != 1) {
    out["edge_output"] = {{"from", ident}, {"h", hex}};
  }
  std::cout << out.dump() << '\n';
  return 0;
}
