// The editor's experience schema; see editor_schema.hpp.
#include "oe/spec/editor_schema.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "oe/spec/schema.hpp"
#include "oe/spec/schema_check.hpp"

namespace oe::spec {

namespace {

// `on_error` as checkOnError (loader.cpp) checks it: unknown keys and retry-only keys beside
// another policy are warnings there, so they are not refused here.
constexpr const char* kOpenOnError = R"json({
  "type": "object",
  "required": ["policy"],
  "properties": {
    "policy": { "enum": ["skip", "fail_run", "retry"] },
    "attempts": { "type": "integer", "minimum": 1, "maximum": 20 },
    "backoff": { "enum": ["linear", "exponential"] },
    "base_ms": { "type": "integer", "minimum": 0 }
  },
  "if": { "properties": { "policy": { "const": "retry" } }, "required": ["policy"] },
  "then": { "required": ["attempts"] }
})json";

// A kind schema's local references ("#/definitions/x") point into that schema; once it sits at
// `where` in the larger document they must point there.
void rebaseRefs(Json& schema, const std::string& where) {
  if (schema.is_object()) {
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (it.key() == "$ref" && it->is_string()) {
        const auto ref = it->get<std::string>();
        if (!ref.empty() && ref.front() == '#') {
          *it = "#" + where + ref.substr(1);
        }
        continue;
      }
      rebaseRefs(*it, where);
    }
  } else if (schema.is_array()) {
    for (auto& item : schema) {
      rebaseRefs(item, where);
    }
  }
}

// The kind schema as it applies to a whole node: the validator leaves the common fields out of a
// closed kind schema's check (validate.cpp, checkKind), so here they are listed as allowed.
Json asNodeSchema(Json kind_schema, const std::vector<std::string>& base_keys,
                  const std::string& where) {
  kind_schema.erase("$schema");  // a subschema's $schema and $id mean nothing or move its base
  kind_schema.erase("$id");
  if (kind_schema.contains("additionalProperties")) {
    const auto kind_keys = SchemaChecker::knownKeys(kind_schema, kind_schema);
    for (const auto& key : base_keys) {
      if (std::find(kind_keys.begin(), kind_keys.end(), key) == kind_keys.end()) {
        kind_schema["properties"][key] = Json::object();
      }
    }
  }
  rebaseRefs(kind_schema, where);
  return kind_schema;
}

}  // namespace

Json editorJsonSchema(const KindCatalog& kinds, bool open_kinds) {
  Json schema = experienceJsonSchema();
  schema["definitions"]["onError"] = Json::parse(kOpenOnError);
  Json& node = schema["definitions"]["node"];
  const std::vector<std::string> base_keys = SchemaChecker::knownKeys(schema, node);

  Json names = Json::array();
  Json selected = Json::array();
  for (const auto& [name, info] : kinds) {
    names.push_back(name);
    // No schema: validate checks no fields of that kind. An invalid one: validate reports the
    // plugin, and an editor could not use it either.
    if (!info.schema || !info.schema->is_object() || !SchemaChecker::compile(*info.schema)) {
      continue;
    }
    const std::string where =
        "/definitions/node/allOf/" + std::to_string(selected.size()) + "/then";
    Json entry = Json::object();
    entry["if"]["properties"]["kind"]["const"] = name;
    entry["if"]["required"] = Json::array({"kind"});
    entry["then"] = asNodeSchema(*info.schema, base_keys, where);
    selected.push_back(std::move(entry));
  }
  Json& kind = node["properties"]["kind"];
  if (open_kinds || names.empty()) {
    kind["description"] =
        "The node kind: one a plugin provides (`oe plugins` lists them). Any other name is "
        "accepted here, as a third party's plugin may provide it; `oe validate` says whether "
        "one does.";
    if (!names.empty()) {
      kind["examples"] = std::move(names);
    }
  } else {
    kind["description"] =
        "The node kind: one of the kinds loaded when this schema was printed (`oe plugins` "
        "lists them). A kind of the experience's own plugins/ needs `oe schema --experience "
        "DIR`; `oe schema --open-kinds` accepts any name.";
    kind["enum"] = std::move(names);
  }
  if (!selected.empty()) {
    node["allOf"] = std::move(selected);
  }
  return schema;
}

}  // namespace oe::spec
