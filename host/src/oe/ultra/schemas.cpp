// See schemas.hpp. Upstream's ANALYSIS_SCHEMA, SYNTHESIS_SCHEMA and the critic's output, with
// the node kinds oe ships.
#include "oe/ultra/schemas.hpp"

namespace oe::ultra {

const Json& analysisSchema() {
  static const Json schema = Json::parse(R"j({
  "type": "object",
  "required": ["name", "description", "phases", "state_fields", "node_sketches"],
  "properties": {
    "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 60},
    "description": {"type": "string"},
    "domain": {"type": "string"},
    "phases": {"type": "array", "items": {"type": "object", "required": ["id"],
      "properties": {"id": {"type": "string"}, "title": {"type": "string"}}}},
    "state_fields": {"type": "array", "items": {"type": "object", "required": ["name", "type"],
      "properties": {"name": {"type": "string"},
        "type": {"enum": ["string", "number", "boolean", "array", "object"]},
        "merge": {"type": "string"}, "description": {"type": "string"}}}},
    "node_sketches": {"type": "array", "items": {"type": "object",
      "required": ["id", "kind", "purpose"],
      "properties": {"id": {"type": "string"},
        "kind": {"enum": ["tool", "agent", "skill", "dataset", "experience", "cli-agent"]},
        "phase": {"type": "string"}, "purpose": {"type": "string"},
        "fan_out_over": {"type": "string"}}}},
    "open_questions": {"type": "array", "items": {"type": "string"}}
  }
})j");
  return schema;
}

const Json& synthesisSchema() {
  static const Json schema = Json::parse(R"j({
  "type": "object",
  "required": ["experience_yaml", "files"],
  "properties": {
    "experience_yaml": {"type": "string", "minLength": 1},
    "files": {"type": "array", "items": {"type": "object", "required": ["path", "content"],
      "properties": {"path": {"type": "string", "minLength": 1}, "content": {"type": "string"}}}},
    "next_steps": {"type": "array", "items": {"type": "string"}}
  }
})j");
  return schema;
}

const Json& critiqueSchema() {
  static const Json schema = Json::parse(R"j({
  "type": "object",
  "required": ["score", "findings"],
  "properties": {
    "score": {"type": "number", "minimum": 0, "maximum": 100},
    "findings": {"type": "array", "items": {"type": "object",
      "required": ["dimension", "severity", "anchor", "evidence", "fix"],
      "properties": {"dimension": {"type": "string"},
        "severity": {"enum": ["high", "medium", "low"]},
        "anchor": {"type": "object", "properties": {"node_id": {"type": "string"},
          "state_field": {"type": "string"}, "file_path": {"type": "string"}}},
        "evidence": {"type": "string"}, "fix": {"type": "string"}}}}
  }
})j");
  return schema;
}

}  // namespace oe::ultra
