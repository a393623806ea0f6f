// A kind's schema, checked without recursion before anything recursive reads it: the nesting is
// measured while parsing (SAX), the subschemas and the $refs between them are walked with
// explicit stacks, and only a schema that passes is handed to valijson to compile.
#include "oe/plugins/kind_schema.hpp"

// Without this, valijson prints and abort()s on a schema it cannot compile.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
// GCC 12 at -O3 reports a false -Wrestrict inside valijson's json_pointer string handling.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#pragma GCC diagnostic pop

#include <cctype>
#include <exception>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oe::plugins {
namespace {

// Stops the parse as soon as the nesting passes the limit, so a 100,000-deep document is never
// built (nor destroyed, nor walked).
class DepthLimit final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool /*val*/) override { return true; }
  bool number_integer(number_integer_t /*val*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*val*/) override { return true; }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override { return true; }
  bool string(string_t& /*val*/) override { return true; }
  bool binary(binary_t& /*val*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return open(); }
  bool key(string_t& /*val*/) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    error = ex.what();
    error_position = position;
    return false;
  }

  size_t depth = 0;
  bool too_deep = false;
  std::string error;
  size_t error_position = 0;

 private:
  bool open() {
    if (++depth > kMaxSchemaJsonDepth) {
      too_deep = true;
      return false;
    }
    return true;
  }
  bool close() {
    --depth;
    return true;
  }
};

// One subschema and where its own subschemas are: `in_place` ones apply to the same value
// ($ref, allOf/anyOf/oneOf, not, if/then/else, dependencies), the others to a part of it
// (properties, items, ...), which is what ends a recursive schema on a finite value.
struct Edge {
  size_t target;
  bool in_place;
};

struct Node {
  const Json* schema;
  std::string pointer;  // "" is the root; JSON Pointer syntax, for messages
  std::vector<Edge> edges;
};

std::string unescapePointerToken(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out.push_back(token[i + 1] == '0' ? '~' : '/');
      ++i;
    } else if (c == '%' && i + 2 < token.size() &&
               std::isxdigit(static_cast<unsigned char>(token[i + 1])) != 0 &&
               std::isxdigit(static_cast<unsigned char>(token[i + 2])) != 0) {
      out.push_back(static_cast<char>(std::stoi(std::string(token.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The value a local reference ("#", "#/definitions/a") names, or nullptr.
const Json* resolveLocal(const Json& root, std::string_view fragment) {
  const Json* at = &root;
  if (fragment.empty()) {
    return at;
  }
  if (fragment.front() != '/') {
    return nullptr;  // a plain-name fragment ("#foo"): valijson decides
  }
  fragment.remove_prefix(1);
  while (true) {
    const size_t slash = fragment.find('/');
    const std::string token = unescapePointerToken(fragment.substr(0, slash));
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) {
        return nullptr;
      }
      at = &*it;
    } else if (at->is_array()) {
      if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos ||
          token.size() > 9 || std::stoul(token) >= at->size()) {
        return nullptr;
      }
      at = &(*at)[std::stoul(token)];
    } else {
      return nullptr;
    }
    if (slash == std::string_view::npos) {
      return at;
    }
    fragment.remove_prefix(slash + 1);
  }
}

class SchemaGraph {
 public:
  explicit SchemaGraph(const Json& root) : root_(root) {}

  // Finds every subschema reachable from the root, with its edges; an error for a local $ref
  // that points nowhere.
  Result<void> build() {
    add(&root_, "");
    for (size_t i = 0; i < nodes_.size(); ++i) {  // nodes_ grows while it is walked
      if (auto linked = link(i); !linked) {
        return linked;
      }
    }
    return {};
  }

  // The longest chain of subschemas a depth-first walk (each subschema once) goes down, against
  // kMaxSchemaDepth; reports where it went too deep.
  Result<void> checkDepth() const {
    std::vector<bool> seen(nodes_.size(), false);
    std::vector<std::pair<size_t, size_t>> stack{{0, 0}};  // node, next edge
    seen[0] = true;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == nodes_[node].edges.size()) {
        stack.pop_back();
        continue;
      }
      const size_t target = nodes_[node].edges[next++].target;
      if (seen[target]) {
        continue;
      }
      seen[target] = true;
      stack.emplace_back(target, 0);
      if (stack.size() > kMaxSchemaDepth) {
        return makeError("nests subschemas (with the $refs followed) more than " +
                         std::to_string(kMaxSchemaDepth) + " deep, at \"#" +
                         nodes_[target].pointer + "\"");
      }
    }
    return {};
  }

  // A cycle of in-place edges: applying the schema would apply itself to the same value again.
  Result<void> checkInPlaceCycles() const {
    enum class Color { kWhite, kGrey, kBlack };
    std::vector<Color> color(nodes_.size(), Color::kWhite);
    for (size_t start = 0; start < nodes_.size(); ++start) {
      if (color[start] != Color::kWhite) {
        continue;
      }
      std::vector<std::pair<size_t, size_t>> stack{{start, 0}};
      color[start] = Color::kGrey;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (next == nodes_[node].edges.size()) {
          color[node] = Color::kBlack;
          stack.pop_back();
          continue;
        }
        const Edge edge = nodes_[node].edges[next++];
        if (!edge.in_place || color[edge.target] == Color::kBlack) {
          continue;
        }
        if (color[edge.target] == Color::kGrey) {
          std::string path;
          bool on_cycle = false;
          for (const auto& [member, unused] : stack) {
            on_cycle = on_cycle || member == edge.target;
            if (on_cycle) {
              path += "\"#" + nodes_[member].pointer + "\" -> ";
            }
          }
          path += "\"#" + nodes_[edge.target].pointer + "\"";
          return makeError("refers to itself without descending into a property or an item (" +
                           path + "), so applying it never ends");
        }
        color[edge.target] = Color::kGrey;
        stack.emplace_back(edge.target, 0);
      }
    }
    return {};
  }

 private:
  size_t add(const Json* schema, std::string pointer) {
    auto [it, inserted] = index_.try_emplace(schema, nodes_.size());
    if (inserted) {
      nodes_.push_back(Node{schema, std::move(pointer), {}});
    }
    return it->second;
  }

  void edge(size_t from, const Json& target, const std::string& pointer, bool in_place) {
    const size_t to = add(&target, pointer);
    nodes_[from].edges.push_back(Edge{to, in_place});
  }

  Result<void> link(size_t i) {
    const Json& schema = *nodes_[i].schema;
    if (!schema.is_object()) {
      return {};  // true/false, or what valijson will reject
    }
    const std::string at = nodes_[i].pointer;
    auto member = [&](const char* key) -> const Json* {
      auto it = schema.find(key);
      return it == schema.end() ? nullptr : &*it;
    };
    if (const Json* ref = member("$ref"); ref != nullptr && ref->is_string()) {
      const std::string& text = ref->get_ref<const std::string&>();
      if (!text.empty() && text.front() == '#') {
        const Json* target = resolveLocal(root_, std::string_view(text).substr(1));
        if (target == nullptr && (text.size() == 1 || text[1] == '/')) {
          return makeError("has a $ref \"" + text + "\" at \"#" + at + "\" that points nowhere");
        }
        if (target != nullptr) {
          edge(i, *target, text.substr(1), /*in_place=*/true);
        }
      }
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
      if (const Json* list = member(key); list != nullptr && list->is_array()) {
        for (size_t k = 0; k < list->size(); ++k) {
          edge(i, (*list)[k], at + "/" + key + "/" + std::to_string(k), true);
        }
      }
    }
    for (const char* key : {"not", "if", "then", "else"}) {
      if (const Json* sub = member(key)) {
        edge(i, *sub, at + "/" + key, true);
      }
    }
    if (const Json* deps = member("dependencies"); deps != nullptr && deps->is_object()) {
      for (const auto& [name, sub] : deps->items()) {
        if (!sub.is_array()) {  // a list of property names is no schema
          edge(i, sub, at + "/dependencies/" + name, true);
        }
      }
    }
    for (const char* key : {"properties", "patternProperties", "definitions"}) {
      if (const Json* map = member(key); map != nullptr && map->is_object()) {
        for (const auto& [name, sub] : map->items()) {
          edge(i, sub, at + "/" + key + "/" + name, false);
        }
      }
    }
    if (const Json* items = member("items"); items != nullptr && items->is_array()) {
      for (size_t k = 0; k < items->size(); ++k) {
        edge(i, (*items)[k], at + "/items/" + std::to_string(k), false);
      }
    } else if (items != nullptr) {
      edge(i, *items, at + "/items", false);
    }
    for (const char* key : {"additionalItems", "additionalProperties", "contains", "propertyNames"}) {
      if (const Json* sub = member(key)) {
        edge(i, *sub, at + "/" + key, false);
      }
    }
    return {};
  }

  const Json& root_;
  std::vector<Node> nodes_;
  std::unordered_map<const Json*, size_t> index_;
};

}  // namespace

Result<Json> checkKindSchema(std::string_view text) {
  DepthLimit limit;
  if (!Json::sax_parse(text, &limit)) {
    if (limit.too_deep) {
      return makeError("nests JSON more than " + std::to_string(kMaxSchemaJsonDepth) +
                       " levels deep");
    }
    return makeError("is not JSON (" + limit.error + ")");
  }
  Json schema = Json::parse(text, nullptr, false);
  if (!schema.is_object()) {
    return makeError("is not a JSON object (a draft-07 schema is one)");
  }
  SchemaGraph graph(schema);
  if (auto built = graph.build(); !built) {
    return built.error();
  }
  if (auto shallow = graph.checkDepth(); !shallow) {
    return shallow.error();
  }
  if (auto acyclic = graph.checkInPlaceCycles(); !acyclic) {
    return acyclic.error();
  }
  try {
    valijson::Schema compiled;
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(schema);
    parser.populateSchema(adapter, compiled);
  } catch (const std::exception& e) {
    return makeError(std::string("is not a JSON Schema (draft-07) oe can use: ") + e.what());
  }
  return schema;
}

}  // namespace oe::plugins
