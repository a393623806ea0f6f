// The experience JSON Schema; see schema.hpp.
#include "oe/spec/schema.hpp"

namespace oe::spec {

namespace {

// Kept as JSON text so it reads like the schema it is.
constexpr const char* kSchemaText = R"json({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://openexpertise.dev/schemas/experience-v0.1.0.json",
  "title": "OpenExpertise experience (as accepted by oe)",
  "type": "object",
  "additionalProperties": false,
  "required": ["name", "version", "state", "graph"],
  "properties": {
    "name": { "type": "string", "minLength": 1 },
    "description": { "type": "string" },
    "version": { "type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+$" },
    "state": {
      "type": "object",
      "additionalProperties": false,
      "required": ["schema"],
      "properties": {
        "schema": {
          "type": "object",
          "additionalProperties": { "$ref": "#/definitions/stateField" }
        },
        "store": { "type": "string", "minLength": 1 }
      }
    },
    "phases": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["id"],
        "properties": { "id": { "type": "string" }, "title": { "type": "string" } }
      }
    },
    "graph": {
      "type": "object",
      "additionalProperties": false,
      "required": ["nodes", "edges"],
      "properties": {
        "nodes": { "type": "array", "minItems": 1, "items": { "$ref": "#/definitions/node" } },
        "edges": { "type": "array", "items": { "$ref": "#/definitions/edge" } },
        "pipelines": { "type": "array", "items": { "$ref": "#/definitions/pipeline" } },
        "loops": { "type": "array", "items": { "$ref": "#/definitions/loop" } }
      }
    },
    "policy": { "$ref": "#/definitions/policy" },
    "secrets": {
      "type": "object",
      "description": "oe: secrets nodes reference as ${secret:NAME} in args, env and prompts; each value is read at run start and never stored (docs/policy.md, Secrets)",
      "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$" },
      "additionalProperties": {
        "type": "object",
        "additionalProperties": false,
        "minProperties": 1,
        "maxProperties": 1,
        "properties": {
          "env": { "type": "string", "minLength": 1, "description": "the environment variable holding the value" },
          "file": { "type": "string", "minLength": 1, "description": "a file holding the value, relative to the experience folder" }
        }
      }
    },
    "triggers": {
      "type": "array",
      "description": "oe: what starts runs of this experience under `oe serve`: cron schedules and signed webhooks (docs/serve.md, Triggers); other front ends ignore it",
      "items": { "$ref": "#/definitions/trigger" }
    },
    "plugins": {
      "type": "object",
      "additionalProperties": false,
      "description": "oe: how this experience uses plugins that are not built in (docs/trust.md)",
      "properties": {
        "override": {
          "type": "array",
          "description": "Kinds and LLM provider names that a plugin of this experience (its plugins/ folder, OE_PLUGIN_PATH) may take from a built-in plugin; without it the built-in one keeps them",
          "uniqueItems": true,
          "items": { "type": "string", "minLength": 1 }
        },
        "isolation": {
          "description": "Where this experience's plugins that are not built in run: process (each in a helper process, oe plugin-host, so a crash fails only the node) or in-process; one value for all, or an object by plugin id. --plugin-isolation and OE_PLUGIN_ISOLATION win over it; it wins over a trust record's (docs/trust.md, Process isolation)",
          "oneOf": [
            { "enum": ["process", "in-process"] },
            {
              "type": "object",
              "minProperties": 1,
              "propertyNames": { "minLength": 1 },
              "additionalProperties": { "enum": ["process", "in-process"] }
            }
          ]
        }
      }
    },
    "runtime": {
      "type": "object",
      "properties": {
        "concurrency": { "type": "integer", "minimum": 1 },
        "deterministic": { "type": "boolean" },
        "max_concurrent_runs": {
          "type": "integer",
          "minimum": 1,
          "description": "oe: runs of this experience `oe serve` starts at once (docs/serve.md, \"The queue\"); --max-concurrent-runs when unset"
        },
        "strict_writes": {
          "type": "boolean",
          "description": "oe: refuse a node's write to a state field outside its writes (the node fails) instead of applying it with a warning"
        },
        "store": {
          "type": "string",
          "description": "A PostgreSQL URL (postgresql://...): state, cache, events and run records in that database (docs/storage.md); --store and OE_STORE win over it"
        },
        "limits": {
          "type": "object",
          "description": "Rate limits per LLM provider (anthropic, openai) or CLI (claude-code, codex, gemini), shared by every node of a run",
          "additionalProperties": {
            "allOf": [
              { "$ref": "#/definitions/llmLimit" },
              {
                "properties": {
                  "models": {
                    "type": "object",
                    "description": "Limits of one model of the provider, on top of the provider's",
                    "additionalProperties": { "$ref": "#/definitions/llmLimit" }
                  }
                }
              }
            ]
          }
        },
        "budget": {
          "type": "object",
          "additionalProperties": false,
          "description": "Checked before every LLM call; a run that would pass it stops with reason budget_exhausted",
          "properties": {
            "max_tokens": { "type": "integer", "minimum": 0 },
            "max_cost_usd": { "type": "number", "minimum": 0 }
          }
        },
        "prices": {
          "type": "object",
          "description": "USD per million tokens per model; overrides the shipped table",
          "additionalProperties": {
            "type": "object",
            "additionalProperties": false,
            "required": ["input", "output"],
            "properties": {
              "input": { "type": "number", "minimum": 0 },
              "output": { "type": "number", "minimum": 0 }
            }
          }
        }
      }
    }
  },
  "definitions": {
    "trigger": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "cron": { "type": "string", "description": "minute hour day-of-month month day-of-week, e.g. \"0 7 * * 1-5\"" },
        "timezone": { "type": "string", "description": "the IANA time zone the cron expression is read in (default UTC)" },
        "missed": { "enum": ["skip", "run_once"], "description": "times passed while no `oe serve` scheduled: skip them (default) or run once for the latest" },
        "webhook": {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "name": { "type": "string", "description": "the hook's name: POST /hooks/<experience>/<name>" },
            "secret": {
              "type": "object",
              "additionalProperties": false,
              "description": "the HMAC-SHA256 key deliveries are signed with",
              "properties": {
                "env": { "type": "string", "minLength": 1 },
                "file": { "type": "string", "minLength": 1 }
              }
            }
          }
        },
        "args": { "type": "object", "description": "the run's args" },
        "args_from": {
          "type": "object",
          "description": "webhook: arg name -> a `$.path` into {body, headers} of the delivery",
          "additionalProperties": { "type": "string" }
        }
      }
    },
    "llmLimit": {
      "type": "object",
      "properties": {
        "max_in_flight": { "type": "integer", "minimum": 1 },
        "requests_per_minute": { "type": "integer", "minimum": 1 },
        "tokens_per_minute": { "type": "integer", "minimum": 1 }
      }
    },
    "stateField": {
      "type": "object",
      "additionalProperties": true,
      "properties": {
        "type": { "enum": ["string", "number", "boolean", "object", "array", "null"] },
        "description": { "type": "string" },
        "merge": { "enum": ["array_append", "set_once", "last_wins"] },
        "$ref": { "type": "string" }
      }
    },
    "node": {
      "type": "object",
      "required": ["id", "kind"],
      "properties": {
        "id": { "type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$" },
        "kind": { "type": "string", "minLength": 1 },
        "phase": { "type": "string" },
        "reads": { "type": "array", "items": { "type": "string" } },
        "writes": { "type": "array", "items": { "type": "string" } },
        "on_error": { "$ref": "#/definitions/onError" },
        "for_each": {
          "type": "object",
          "required": ["source"],
          "properties": {
            "source": { "type": "string" },
            "concurrency": { "type": "integer", "minimum": 1 }
          }
        },
        "timeout_ms": { "type": "integer", "minimum": 1 },
        "queue": { "type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$" },
        "cache": {
          "type": ["boolean", "object"],
          "description": "oe: false never replays the node from the cache nor stores its output; inputs: globs of files, relative to the experience folder, whose content joins the node's cache key",
          "properties": {
            "inputs": { "type": "array", "items": { "type": "string", "minLength": 1 } }
          }
        },
        "args": { "type": "object" },
        "policy": { "$ref": "#/definitions/policy" },
        "approval": {
          "description": "oe: a person approves or rejects before the node runs; the run parks (status waiting) until `oe approve` or `oe reject` (docs/policy.md, Approvals)",
          "$ref": "#/definitions/approval"
        },
        "workspace": {
          "description": "oe: worktree runs each attempt (each for_each item) of a tool or cli-agent node in a fresh git worktree of the experience's repository and captures its diff (docs/workspaces.md)",
          "oneOf": [
            { "const": "worktree" },
            {
              "type": "object",
              "required": ["mode"],
              "additionalProperties": false,
              "properties": {
                "mode": { "const": "worktree" },
                "repo": { "type": "string", "minLength": 1, "description": "the repository, relative to the experience folder (default: the one holding it)" }
              }
            }
          ]
        }
      }
    },
    "approval": {
      "type": ["object", "boolean"],
      "additionalProperties": false,
      "properties": {
        "prompt": { "type": "string", "description": "what the person is asked" },
        "show": { "type": "array", "items": { "type": "string", "minLength": 1 }, "description": "what is presented with the question: $.path of the state, or diff:NODE (a worktree node's diff)" },
        "timeout": { "type": "string", "pattern": "^[0-9]+[smhd]$", "description": "how long the question stays open, e.g. 30m, 2h, 7d" },
        "on_timeout": { "enum": ["approve", "reject", "fail"], "description": "what a passed deadline decides (default fail)" }
      }
    },
    "policy": {
      "type": "object",
      "description": "oe: what the processes a node starts may touch, enforced by the kernel (docs/policy.md); a node's policy can only narrow the experience's",
      "additionalProperties": false,
      "properties": {
        "enforce": { "enum": ["required", "best_effort"] },
        "fs": {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "read": { "type": "array", "items": { "type": "string", "minLength": 1 } },
            "write": { "type": "array", "items": { "type": "string", "minLength": 1 } }
          }
        },
        "network": {
          "oneOf": [
            { "enum": ["none", "loopback", "full"] },
            {
              "type": "object",
              "additionalProperties": false,
              "required": ["allow"],
              "properties": {
                "allow": { "type": "array", "items": { "type": "string", "minLength": 1 } }
              }
            }
          ]
        },
        "env": {
          "type": "array",
          "items": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }
        },
        "limits": {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "cpu_seconds": { "type": "integer", "minimum": 1 },
            "memory_mb": { "type": "integer", "minimum": 1 },
            "processes": { "type": "integer", "minimum": 1 },
            "file_size_mb": { "type": "integer", "minimum": 1 },
            "open_files": { "type": "integer", "minimum": 1 }
          }
        }
      }
    },
    "onError": {
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["policy"],
          "properties": { "policy": { "const": "skip" } }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["policy"],
          "properties": { "policy": { "const": "fail_run" } }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["policy", "attempts"],
          "properties": {
            "policy": { "const": "retry" },
            "attempts": { "type": "integer", "minimum": 1, "maximum": 20 },
            "backoff": { "enum": ["linear", "exponential"] },
            "base_ms": { "type": "integer", "minimum": 0 }
          }
        }
      ]
    },
    "edge": {
      "type": "object",
      "required": ["from", "to"],
      "properties": {
        "from": { "type": "string" },
        "to": { "type": "string" },
        "when": { "type": "string" }
      }
    },
    "pipeline": {
      "type": "object",
      "required": ["id", "items", "stages"],
      "properties": {
        "id": { "type": "string" },
        "items": { "type": "string" },
        "stages": { "type": "array", "minItems": 1, "items": { "type": "string" } },
        "phase": { "type": "string" }
      }
    },
    "loop": {
      "type": "object",
      "required": ["id", "body"],
      "properties": {
        "id": { "type": "string" },
        "body": { "type": "string" },
        "until": { "type": "string" },
        "max_iters": { "type": "integer", "minimum": 1 },
        "budget": { "type": "integer", "minimum": 0 },
        "phase": { "type": "string" }
      }
    }
  }
})json";

}  // namespace

Json experienceJsonSchema() { return Json::parse(kSchemaText); }

Json experienceValidationSchema() {
  Json schema = experienceJsonSchema();
  schema["definitions"]["onError"] = Json::object();  // checked by checkOnError (loader.cpp)
  return schema;
}

}  // namespace oe::spec
