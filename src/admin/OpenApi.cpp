#include "admin/OpenApi.hpp"

namespace sluice::admin {
namespace {

// Kept as one literal so the document reads like the contract it is; tests/unit/admin checks
// that it parses and covers every route AdminApi serves.
constexpr std::string_view kDocument = R"json({
  "openapi": "3.1.0",
  "info": {
    "title": "Sluice admin API",
    "version": "1",
    "description": "The control plane of a Sluice gateway: virtual keys, channels and their upstream keys, request logs and usage, upstream-key health, the effective config and reload, scoped admin tokens and the audit log. Every call takes the master key or an admin token (Authorization: Bearer KEY); an admin token reaches what its role allows (x-sluice-role on each operation: member < viewer < operator < admin), and a call beyond it is a 403 naming the role it needs. A member reaches the operations marked x-sluice-team-scoped for their own teams only (a member token's team, or the teams naming their OIDC subject or e-mail): other teams' keys answer 404, as missing ones do. Every write that succeeds is an audit row. Errors are {\"error\":{\"message\",\"type\",\"param\"}}; param names the refused field of a 400, and is null otherwise. Upstream secrets are never returned: responses show them masked."
  },
  "servers": [{"url": "/admin/api"}],
  "security": [{"masterKey": []}, {"consoleSession": []}],
  "tags": [
    {"name": "keys", "description": "Virtual keys: the keys applications use. Stored as SHA-256 hashes; the secret is shown once, when the key is created."},
    {"name": "teams", "description": "Teams: limits and budgets over the sum of their keys, and members (by OIDC subject or e-mail) who manage those keys."},
    {"name": "channels", "description": "Channels created through this API (source store), and the read-only channels of the config file (source config)."},
    {"name": "upstream-keys", "description": "Provider API keys of store channels, sealed with AES-256-GCM under store.secret_key (SLUICE_SECRET_KEY); and the live health of every upstream key."},
    {"name": "mcp-servers", "description": "The MCP servers behind /mcp: those added through this API (source store; header values sealed with AES-256-GCM under store.secret_key) and the read-only ones of the config file's mcp.servers (source config), each with its live state and tools. A change takes effect at once, without a restart."},
    {"name": "observability", "description": "Request logs and usage."},
    {"name": "operations", "description": "The effective config and reload."},
    {"name": "access", "description": "Who may do what: scoped admin tokens, the caller's own identity, and the audit log of every admin write."}
  ],
  "paths": {
    "/logs": {
      "get": {
        "tags": ["observability"], "operationId": "listLogs", "summary": "Request logs, newest first, paged by cursor",
        "parameters": [
          {"name": "from", "in": "query", "description": "Unix ms, inclusive", "schema": {"type": "integer", "minimum": 0}},
          {"name": "to", "in": "query", "description": "Unix ms, exclusive", "schema": {"type": "integer", "minimum": 0}},
          {"name": "status", "in": "query", "description": "HTTP status sent to the client", "schema": {"type": "integer", "minimum": 100, "maximum": 599}},
          {"name": "model", "in": "query", "schema": {"type": "string"}},
          {"name": "channel", "in": "query", "schema": {"type": "string"}},
          {"name": "virtual_key_id", "in": "query", "description": "only requests made with this virtual key", "schema": {"type": "integer", "minimum": 1}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
          {"name": "cursor", "in": "query", "description": "next_cursor of the previous page", "schema": {"type": "string"}}
        ],
        "responses": {
          "200": {"description": "One page", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data", "next_cursor"],
            "properties": {
              "data": {"type": "array", "items": {"$ref": "#/components/schemas/LogEntry"}},
              "next_cursor": {"type": ["string", "null"], "description": "null on the last page"}}}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/logs/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "description": "the id of a log entry (not its request_id)", "schema": {"type": "integer", "minimum": 1}}],
      "get": {
        "tags": ["observability"], "operationId": "getLog", "summary": "One request: every attempt, timings, tokens, cost and the stored bodies",
        "responses": {
          "200": {"description": "The log entry", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LogDetail"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/usage": {
      "get": {
        "tags": ["observability"], "operationId": "getUsage", "summary": "Requests, tokens and cost summed over a time range, as JSON or CSV", "x-sluice-team-scoped": true,
        "parameters": [
          {"name": "from", "in": "query", "description": "Unix ms, inclusive; default: 30 days before to", "schema": {"type": "integer", "minimum": 0}},
          {"name": "to", "in": "query", "description": "Unix ms, exclusive; default: now", "schema": {"type": "integer", "minimum": 0}},
          {"name": "by", "in": "query", "description": "comma-separated dimensions to group by: day, model, channel, key, team (a key's requests count for the team the key is in now)", "schema": {"type": "string", "examples": ["day,model"]}},
          {"name": "group_by", "in": "query", "description": "the same as by", "schema": {"type": "string", "examples": ["team"]}},
          {"name": "team_id", "in": "query", "description": "only requests made with keys of this team (id or name)", "schema": {"type": "string"}},
          {"name": "model", "in": "query", "schema": {"type": "string"}},
          {"name": "channel", "in": "query", "schema": {"type": "string"}},
          {"name": "virtual_key_id", "in": "query", "description": "only requests made with this virtual key", "schema": {"type": "integer", "minimum": 1}},
          {"name": "format", "in": "query", "description": "csv: a text/csv attachment with one line per row and a column per grouped dimension (day as YYYY-MM-DD, key as virtual_key_id and virtual_key_name), then requests, errors, input_tokens, output_tokens, cached_tokens, cost_usd, cache_write_tokens, reasoning_tokens", "schema": {"type": "string", "enum": ["json", "csv"], "default": "json"}}
        ],
        "responses": {
          "200": {"description": "One row per group", "content": {
            "application/json": {"schema": {
              "type": "object", "required": ["data", "from_ms", "to_ms"],
              "properties": {
                "data": {"type": "array", "items": {"$ref": "#/components/schemas/UsageRow"}},
                "from_ms": {"type": "integer"}, "to_ms": {"type": "integer"}}}},
            "text/csv": {"schema": {"type": "string"}, "example": "day,model,requests,errors,input_tokens,output_tokens,cached_tokens,cost_usd,cache_write_tokens,reasoning_tokens\r\n2026-01-31,gpt-4o-mini,120,2,5400,9100,0,0.00627,0,0\r\n"}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/stats": {
      "get": {
        "tags": ["observability"], "operationId": "getStats",
        "summary": "The dashboard: requests, errors, tokens, cost and latency percentiles over time, with totals and the top channels, models and keys",
        "description": "Read from the store, so every instance answers the same. Buckets are step_s wide and aligned to multiples of step_s since the Unix epoch: the first and last may start before since_ms or end after until_ms, but only requests in [since_ms, until_ms) count. Every bucket is present (zeros when empty). Percentiles (nearest rank, in ms) are over the requests that succeeded (status < 400) and are null when there are none. A window of more than 200000 requests reads the timings of 1 request in N (the same ones on every call) and says \"sampled\": true; counts and sums are always exact.",
        "parameters": [
          {"name": "since_ms", "in": "query", "description": "Unix ms, inclusive; default: until_ms minus one hour", "schema": {"type": "integer", "minimum": 0}},
          {"name": "until_ms", "in": "query", "description": "Unix ms, exclusive; default: now. The window is at most 31 days", "schema": {"type": "integer", "minimum": 0}},
          {"name": "step_s", "in": "query", "description": "bucket width in seconds; default: the smallest of 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400 giving at most 120 buckets. At most 1500 buckets", "schema": {"type": "integer", "minimum": 1, "maximum": 2678400}}
        ],
        "responses": {
          "200": {"description": "The window", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Stats"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/keys": {
      "get": {
        "tags": ["keys"], "operationId": "listKeys", "summary": "Every virtual key, revoked and expired ones included (a member: their teams' keys)", "x-sluice-team-scoped": true,
        "parameters": [{"name": "status", "in": "query", "description": "only keys in this status", "schema": {"$ref": "#/components/schemas/KeyStatus"}},
                       {"name": "team_id", "in": "query", "description": "only keys of this team (id or name)", "schema": {"type": "string"}}],
        "responses": {
          "200": {"description": "The keys", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Key"}}}}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      },
      "post": {
        "tags": ["keys"], "operationId": "createKey", "summary": "Create a virtual key; the response holds its secret, shown this once", "x-sluice-team-scoped": true,
        "description": "A member creates keys in their own teams only: team_id is one of theirs (it may be left out when they have one team); any other answers 403.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KeyCreate"}}}},
        "responses": {
          "201": {"description": "Created", "content": {"application/json": {"schema": {
            "type": "object", "required": ["key", "secret"],
            "properties": {
              "key": {"$ref": "#/components/schemas/Key"},
              "secret": {"type": "string", "pattern": "^sk-slc-[0-9A-Za-z]{40}$", "description": "The key to give the application. Not stored and never shown again."}}}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/keys/{id}": {
      "parameters": [{"$ref": "#/components/parameters/KeyId"}],
      "get": {
        "tags": ["keys"], "operationId": "getKey", "summary": "One virtual key", "x-sluice-team-scoped": true,
        "responses": {
          "200": {"$ref": "#/components/responses/Key"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "patch": {
        "tags": ["keys"], "operationId": "updateKey", "summary": "Change any subset of the writable fields; null removes a limit, a budget or the expiry", "x-sluice-team-scoped": true,
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/KeyUpdate"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/Key"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "delete": {
        "tags": ["keys"], "operationId": "deleteKey", "summary": "Delete a virtual key (its request logs stay)", "x-sluice-team-scoped": true,
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/keys/{id}/revoke": {
      "parameters": [{"$ref": "#/components/parameters/KeyId"}],
      "post": {
        "tags": ["keys"], "operationId": "revokeKey", "summary": "Revoke a virtual key at once; idempotent (a second call keeps the first time)", "x-sluice-team-scoped": true,
        "responses": {
          "200": {"$ref": "#/components/responses/Key"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/channels": {
      "get": {
        "tags": ["channels"], "operationId": "listChannels", "summary": "The channels of the config file (source config) and those created here (source store)",
        "responses": {
          "200": {"description": "The channels", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Channel"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      },
      "post": {
        "tags": ["channels"], "operationId": "createChannel", "summary": "Create a channel; add its keys with POST /channels/{id}/keys",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChannelCreate"}}}},
        "responses": {
          "201": {"$ref": "#/components/responses/Channel"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      }
    },
    "/channels/{id}": {
      "parameters": [{"$ref": "#/components/parameters/ChannelId"}],
      "get": {
        "tags": ["channels"], "operationId": "getChannel", "summary": "One channel (a config-file channel is shown read-only)",
        "responses": {
          "200": {"$ref": "#/components/responses/Channel"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "patch": {
        "tags": ["channels"], "operationId": "updateChannel", "summary": "Change any subset of the writable fields of a store channel",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChannelUpdate"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/Channel"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      },
      "delete": {
        "tags": ["channels"], "operationId": "deleteChannel", "summary": "Delete a store channel and its upstream keys",
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      }
    },
    "/channels/{id}/keys": {
      "parameters": [{"$ref": "#/components/parameters/ChannelId"}],
      "get": {
        "tags": ["upstream-keys"], "operationId": "listChannelKeys", "summary": "The upstream keys of a store channel, masked",
        "responses": {
          "200": {"description": "The keys", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/UpstreamKey"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      },
      "post": {
        "tags": ["upstream-keys"], "operationId": "createChannelKey", "summary": "Add a provider API key to a store channel; it is encrypted before it is stored",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UpstreamKeyCreate"}}}},
        "responses": {
          "201": {"$ref": "#/components/responses/UpstreamKey"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/channels/{id}/keys/{key_id}": {
      "parameters": [{"$ref": "#/components/parameters/ChannelId"}, {"$ref": "#/components/parameters/UpstreamKeyId"}],
      "get": {
        "tags": ["upstream-keys"], "operationId": "getChannelKey", "summary": "One upstream key, masked",
        "responses": {
          "200": {"$ref": "#/components/responses/UpstreamKey"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      },
      "patch": {
        "tags": ["upstream-keys"], "operationId": "updateChannelKey", "summary": "Change the label, or replace the secret (rotation)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UpstreamKeyUpdate"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/UpstreamKey"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      },
      "delete": {
        "tags": ["upstream-keys"], "operationId": "deleteChannelKey", "summary": "Remove an upstream key",
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      }
    },
    "/upstream-keys": {
      "get": {
        "tags": ["upstream-keys"], "operationId": "listUpstreamKeyHealth", "summary": "Live health of every upstream key, config-file and store channels alike",
        "responses": {
          "200": {"description": "One entry per key", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/UpstreamKeyHealth"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/upstream-keys/{ref}/disable": {
      "parameters": [{"$ref": "#/components/parameters/KeyRef"}],
      "post": {
        "tags": ["upstream-keys"], "operationId": "disableUpstreamKey", "summary": "Take a key out of rotation until it is enabled again",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {
          "type": "object", "additionalProperties": false,
          "properties": {"reason": {"type": "string", "description": "shown in the key's health"}}}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/UpstreamKeyHealth"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/upstream-keys/{ref}/enable": {
      "parameters": [{"$ref": "#/components/parameters/KeyRef"}],
      "post": {
        "tags": ["upstream-keys"], "operationId": "enableUpstreamKey", "summary": "Put a disabled or cooling key back into rotation",
        "responses": {
          "200": {"$ref": "#/components/responses/UpstreamKeyHealth"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/upstream-keys/{ref}/probe": {
      "parameters": [{"$ref": "#/components/parameters/KeyRef"}],
      "post": {
        "tags": ["upstream-keys"], "operationId": "probeUpstreamKey", "summary": "Send one small request to the provider with this key and report how it went",
        "responses": {
          "200": {"description": "The probe's outcome", "content": {"application/json": {"schema": {
            "type": "object", "required": ["ok", "status", "latency_ms", "message"],
            "properties": {
              "ok": {"type": "boolean"},
              "status": {"type": "integer", "description": "HTTP status from the provider (0: no response)"},
              "latency_ms": {"type": "integer"},
              "message": {"type": "string"},
              "key": {"$ref": "#/components/schemas/UpstreamKeyHealth"}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/config": {
      "get": {
        "tags": ["operations"], "operationId": "getConfig", "summary": "The effective config as YAML, every secret masked",
        "responses": {
          "200": {"description": "The config", "content": {"application/json": {"schema": {
            "type": "object", "required": ["yaml", "source"], "properties": {
              "yaml": {"type": "string"},
              "source": {"type": "string", "description": "the config file's path, or \"embedded default\""}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/settings": {
      "get": {
        "tags": ["operations"], "operationId": "getSettings", "summary": "The protect-and-save stages as this instance runs them: cache (with its counters), redaction rules, screening, guardrail",
        "responses": {
          "200": {"description": "The settings", "content": {"application/json": {"schema": {
            "type": "object", "required": ["cache", "redaction", "screening", "guardrail"], "properties": {
              "cache": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "backend": {"type": "string", "enum": ["memory", "redis", "none"]}, "ttl_ms": {"type": "integer"}, "max_bytes": {"type": "integer"}, "shared": {"type": "boolean"}, "stats": {"type": "object"}}},
              "redaction": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "can_encrypt": {"type": "boolean"}, "rules": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "action": {"type": "string", "enum": ["mask", "encrypt", "block"]}}}}}},
              "screening": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "action": {"type": "string", "enum": ["off", "log", "warn", "block"]}, "threshold": {"type": "number"}, "deny": {"type": "array", "items": {"type": "string"}}}},
              "guardrail": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "endpoint": {"type": "string"}, "on_failure": {"type": "string", "enum": ["fail_open", "fail_closed"]}, "timeout_ms": {"type": "integer"}}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      },
      "patch": {
        "tags": ["operations"], "operationId": "patchSettings", "summary": "Switch the stages at run time for every instance (kept in the store); null returns a switch to the config file's value",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {
          "cache": {"type": "object", "properties": {"enabled": {"type": ["boolean", "null"]}}},
          "redaction": {"type": "object", "properties": {"enabled": {"type": ["boolean", "null"]}}},
          "screening": {"type": "object", "properties": {"action": {"type": ["string", "null"], "enum": ["off", "log", "warn", "block", null]}}},
          "guardrail": {"type": "object", "properties": {"enabled": {"type": ["boolean", "null"]}}}}}}}},
        "responses": {
          "200": {"description": "The settings now in force (as GET)", "content": {"application/json": {"schema": {"type": "object"}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/model-discovery": {
      "get": {
        "tags": ["operations"], "operationId": "getModelDiscovery", "summary": "Model discovery: for each channel whose models hold globs, the provider's models they match (read at start and every routing.discovery_interval)",
        "responses": {
          "200": {"description": "One entry per discovering channel", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data", "interval_ms"], "properties": {
              "interval_ms": {"type": "integer", "description": "routing.discovery_interval; 0: off"},
              "data": {"type": "array", "items": {
              "type": "object", "required": ["channel", "globs", "models", "refreshed_at_ms", "error"], "properties": {
                "channel": {"type": "string"},
                "globs": {"type": "array", "items": {"type": "string"}},
                "models": {"type": "array", "items": {"type": "string"}, "description": "the last good list, sorted"},
                "refreshed_at_ms": {"type": ["integer", "null"], "description": "Unix ms of the last good refresh; null: none yet"},
                "error": {"type": ["string", "null"], "description": "why the last refresh failed (the list above is kept)"}}}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/pricing": {
      "get": {
        "tags": ["operations"], "operationId": "getPricing", "summary": "The price table in force: the shipped prices with the config's pricing: overrides",
        "responses": {
          "200": {"description": "USD per million tokens", "content": {"application/json": {"schema": {
            "type": "object", "required": ["models"], "properties": {"models": {"type": "array", "items": {
              "type": "object", "required": ["model", "input_per_mtok", "output_per_mtok", "source"], "properties": {
                "model": {"type": "string", "description": "a name or a glob"},
                "input_per_mtok": {"type": "number"}, "output_per_mtok": {"type": "number"},
                "cached_input_per_mtok": {"type": "number", "description": "cache reads; absent: as input"},
                "cache_write_per_mtok": {"type": "number", "description": "cache writes; absent: as input"},
                "reasoning_per_mtok": {"type": "number", "description": "reasoning tokens; absent: as output"},
                "source": {"type": "string", "enum": ["shipped", "config"]}}}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/mcp-servers": {
      "get": {
        "tags": ["mcp-servers"], "operationId": "listMcpServers", "summary": "Every MCP server, config-file and store alike, with its live state",
        "responses": {
          "200": {"description": "The servers", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/McpServer"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      },
      "post": {
        "tags": ["mcp-servers"], "operationId": "createMcpServer", "summary": "Add an MCP server; its header values are encrypted before they are stored. It starts at once: its tools appear on /mcp and clients with an open stream get notifications/tools/list_changed",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/McpServerCreate"}}}},
        "responses": {
          "201": {"$ref": "#/components/responses/McpServer"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "409": {"$ref": "#/components/responses/Conflict"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      }
    },
    "/mcp-servers/{id}": {
      "parameters": [{"$ref": "#/components/parameters/McpServerId"}],
      "get": {
        "tags": ["mcp-servers"], "operationId": "getMcpServer", "summary": "One MCP server (a config-file server is shown read-only)",
        "responses": {
          "200": {"$ref": "#/components/responses/McpServer"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "patch": {
        "tags": ["mcp-servers"], "operationId": "updateMcpServer", "summary": "Change the name, url or command, headers or timeout of a store server; it reconnects with the new settings",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/McpServerUpdate"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/McpServer"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      },
      "delete": {
        "tags": ["mcp-servers"], "operationId": "deleteMcpServer", "summary": "Remove a store server: its tools leave /mcp, a stdio server's process ends",
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "409": {"$ref": "#/components/responses/Conflict"}
        }
      }
    },
    "/reload": {
      "post": {
        "tags": ["operations"], "operationId": "reload", "summary": "Reload the config file now; a config that fails validation is not applied",
        "responses": {
          "200": {"$ref": "#/components/responses/ReloadResult"},
          "400": {"$ref": "#/components/responses/ReloadResult"},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/teams": {
      "get": {
        "tags": ["teams"], "operationId": "listTeams", "summary": "The teams (a member: their own), with members, limits and the spend of their keys", "x-sluice-role": "viewer", "x-sluice-team-scoped": true,
        "responses": {
          "200": {"description": "The teams", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Team"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "503": {"$ref": "#/components/responses/Unavailable"}
        }
      },
      "post": {
        "tags": ["teams"], "operationId": "createTeam", "summary": "Create a team", "x-sluice-role": "operator",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"allOf": [{"$ref": "#/components/schemas/TeamWrite"}, {"required": ["name"]}]}}}},
        "responses": {
          "201": {"$ref": "#/components/responses/Team"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}
        }
      }
    },
    "/teams/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "description": "team id, or its name", "schema": {"type": "string"}}],
      "get": {
        "tags": ["teams"], "operationId": "getTeam", "summary": "One team", "x-sluice-role": "viewer", "x-sluice-team-scoped": true,
        "responses": {
          "200": {"$ref": "#/components/responses/Team"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "patch": {
        "tags": ["teams"], "operationId": "updateTeam", "summary": "Change a team's name, limits or members (members replaces the list; add_members and remove_members change it)", "x-sluice-role": "operator",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TeamWrite"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/Team"},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "delete": {
        "tags": ["teams"], "operationId": "deleteTeam", "summary": "Delete a team: its keys stay, without a team; its member tokens stop working", "x-sluice-role": "operator",
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/me": {
      "get": {
        "tags": ["access"], "operationId": "getMe", "summary": "Who the caller is and their role", "x-sluice-role": "member",
        "responses": {
          "200": {"description": "The caller", "content": {"application/json": {"schema": {
            "type": "object", "required": ["actor", "role", "kind"],
            "properties": {"actor": {"type": "string", "description": "\"master key\", \"token:NAME\" or \"oidc:SUBJECT <EMAIL>\""},
                           "role": {"$ref": "#/components/schemas/Role"},
                           "kind": {"enum": ["master_key", "token", "oidc"]},
                           "subject": {"type": "string", "description": "oidc: the identity provider's sub"},
                           "email": {"type": "string", "description": "oidc: the ID token's email"},
                           "name": {"type": "string", "description": "oidc: the display name"},
                           "csrf_token": {"type": "string", "description": "oidc: send it in x-sluice-csrf on every write made with the session cookie"},
                           "team_id": {"type": "integer", "description": "a member token's team"}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    },
    "/tokens": {
      "get": {
        "tags": ["access"], "operationId": "listTokens", "summary": "The admin tokens (never their secrets or hashes)", "x-sluice-role": "admin",
        "responses": {
          "200": {"description": "The tokens", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/AdminToken"}}}}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}
        }
      },
      "post": {
        "tags": ["access"], "operationId": "createToken", "summary": "Create an admin token; its secret is in this answer only", "x-sluice-role": "admin",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
          "type": "object", "required": ["name", "role"], "additionalProperties": false,
          "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 128},
                         "role": {"$ref": "#/components/schemas/Role"},
                         "team": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string"}], "description": "a member token's team, by id or name: required with role member, refused with the others"},
                         "expires_in": {"oneOf": [{"type": "integer", "minimum": 1, "description": "seconds"},
                                                  {"type": "string", "description": "a duration: \"90d\", \"12h\""},
                                                  {"type": "null"}]}}}}}},
        "responses": {
          "201": {"description": "The token and its secret", "content": {"application/json": {"schema": {
            "type": "object", "required": ["token", "secret"],
            "properties": {"token": {"$ref": "#/components/schemas/AdminToken"},
                           "secret": {"type": "string", "pattern": "^sk-sla-[0-9A-Za-z]{40}$"}}}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}
        }
      }
    },
    "/tokens/{id}": {
      "parameters": [{"$ref": "#/components/parameters/TokenId"}],
      "get": {
        "tags": ["access"], "operationId": "getToken", "summary": "One admin token", "x-sluice-role": "admin",
        "responses": {
          "200": {"description": "The token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AdminToken"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      },
      "delete": {
        "tags": ["access"], "operationId": "deleteToken", "summary": "Delete an admin token (it stops working at once)", "x-sluice-role": "admin",
        "responses": {
          "204": {"description": "Deleted"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/tokens/{id}/revoke": {
      "parameters": [{"$ref": "#/components/parameters/TokenId"}],
      "post": {
        "tags": ["access"], "operationId": "revokeToken", "summary": "Revoke an admin token at once; idempotent (the row stays, for the record)", "x-sluice-role": "admin",
        "responses": {
          "200": {"description": "The revoked token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AdminToken"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"}
        }
      }
    },
    "/audit": {
      "get": {
        "tags": ["access"], "operationId": "listAudit", "summary": "Every admin write, newest first, paged by cursor (append-only)", "x-sluice-role": "admin",
        "parameters": [
          {"name": "from", "in": "query", "description": "Unix ms, inclusive", "schema": {"type": "integer", "minimum": 0}},
          {"name": "to", "in": "query", "description": "Unix ms, exclusive", "schema": {"type": "integer", "minimum": 0}},
          {"name": "actor", "in": "query", "description": "\"master key\" or \"token:NAME\"", "schema": {"type": "string"}},
          {"name": "action", "in": "query", "schema": {"enum": ["create", "update", "delete", "revoke", "enable", "disable", "probe", "reload", "settings"]}},
          {"name": "target", "in": "query", "description": "the object's admin path, e.g. /keys/12", "schema": {"type": "string"}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
          {"name": "cursor", "in": "query", "description": "next_cursor of the previous page", "schema": {"type": "string"}}
        ],
        "responses": {
          "200": {"description": "A page of audit rows", "content": {"application/json": {"schema": {
            "type": "object", "required": ["data", "next_cursor"],
            "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/AuditEntry"}},
                           "next_cursor": {"type": ["string", "null"]}}}}}},
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"}
        }
      }
    },
    "/openapi.json": {
      "get": {
        "tags": ["operations"], "operationId": "getOpenApi", "summary": "This document",
        "responses": {
          "200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}},
          "401": {"$ref": "#/components/responses/Unauthorized"}
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "masterKey": {"type": "http", "scheme": "bearer", "description": "auth.master_key of the config, or an admin token (sk-sla-...) within its role"},
      "consoleSession": {"type": "apiKey", "in": "cookie", "name": "sluice_session", "description": "a console session from single sign-on (auth.oidc, GET /auth/login); writes also need x-sluice-csrf: the csrf_token of GET /me"}
    },
    "parameters": {
      "KeyId": {"name": "id", "in": "path", "required": true, "description": "virtual key id", "schema": {"type": "integer", "minimum": 1}},
      "ChannelId": {"name": "id", "in": "path", "required": true, "description": "channel id, or channel name (config-file channels have only a name)", "schema": {"type": "string"}},
      "UpstreamKeyId": {"name": "key_id", "in": "path", "required": true, "description": "upstream key id", "schema": {"type": "integer", "minimum": 1}},
      "TokenId": {"name": "id", "in": "path", "required": true, "description": "admin token id", "schema": {"type": "integer", "minimum": 1}},
      "KeyRef": {"name": "ref", "in": "path", "required": true, "description": "the ref of a key as GET /upstream-keys lists it", "schema": {"type": "string"}},
      "McpServerId": {"name": "id", "in": "path", "required": true, "description": "MCP server id, or its name (config-file servers have only a name)", "schema": {"type": "string"}}
    },
    "responses": {
      "Key": {"description": "The key", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Key"}}}},
      "Team": {"description": "The team", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Team"}}}},
      "Channel": {"description": "The channel", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
      "UpstreamKey": {"description": "The upstream key", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UpstreamKey"}}}},
      "ReloadResult": {"description": "ok true: the new config is serving; ok false (400): it failed validation and the running config stays, message says where", "content": {"application/json": {"schema": {
        "type": "object", "required": ["ok", "message"],
        "properties": {"ok": {"type": "boolean"}, "message": {"type": "string"}}}}}},
      "McpServer": {"description": "The MCP server", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/McpServer"}}}},
      "UpstreamKeyHealth": {"description": "The key's health", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UpstreamKeyHealth"}}}},
      "BadRequest": {"description": "A field was refused (param names it), or the body is not a JSON object (param null)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Forbidden": {"description": "The caller's role does not reach this operation (x-sluice-role says which does)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Unauthorized": {"description": "No master key or admin token, or a wrong, revoked or expired one", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "NotFound": {"description": "No such id", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Conflict": {"description": "The name is taken (by a store channel or MCP server, or one of the config file), or the channel or MCP server is defined in the config file and is read-only here", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "Unavailable": {"description": "The store cannot be reached, or no store.secret_key (SLUICE_SECRET_KEY) is set to encrypt upstream keys or MCP server headers", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    },
    "schemas": {
      "Role": {"enum": ["member", "viewer", "operator", "admin"]},
      "TeamMember": {"oneOf": [
        {"type": "object", "required": ["email"], "additionalProperties": false, "properties": {"email": {"type": "string", "format": "email", "maxLength": 254, "description": "kept in lower case; matched without case"}}},
        {"type": "object", "required": ["subject"], "additionalProperties": false, "properties": {"subject": {"type": "string", "minLength": 1, "maxLength": 255, "description": "the OIDC sub claim, matched exactly"}}}]},
      "Team": {
        "type": "object", "required": ["id", "name", "rpm", "tpm", "budget_daily_usd", "budget_monthly_usd", "budget_total_usd", "members", "keys", "spend", "created_at_ms", "updated_at_ms"],
        "description": "Limits and budgets that bound the sum of the team's keys (a request over them is a 429 naming the team, as a key's), and the people who manage those keys",
        "properties": {
          "id": {"type": "integer"}, "name": {"type": "string"},
          "rpm": {"type": ["integer", "null"]}, "tpm": {"type": ["integer", "null"]},
          "budget_daily_usd": {"type": ["number", "null"]}, "budget_monthly_usd": {"type": ["number", "null"]}, "budget_total_usd": {"type": ["number", "null"]},
          "members": {"type": "array", "items": {"$ref": "#/components/schemas/TeamMember"}},
          "keys": {"type": "integer", "description": "how many virtual keys are in the team"},
          "spend": {"type": "object", "required": ["day_usd", "month_usd", "total_usd"], "description": "the sum of its keys' spend: UTC day, UTC month, ever", "properties": {
            "day_usd": {"type": "number"}, "month_usd": {"type": "number"}, "total_usd": {"type": "number"}}},
          "created_at_ms": {"type": "integer"}, "updated_at_ms": {"type": "integer"}
        }
      },
      "TeamWrite": {
        "type": "object", "additionalProperties": false,
        "description": "Give members (the whole list) or add_members / remove_members (changes to it), not both.",
        "properties": {
          "name": {"type": "string", "pattern": "^(?![0-9]+$)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
          "rpm": {"type": ["integer", "null"], "minimum": 1}, "tpm": {"type": ["integer", "null"], "minimum": 1},
          "budget_daily_usd": {"type": ["number", "null"], "minimum": 0}, "budget_monthly_usd": {"type": ["number", "null"], "minimum": 0}, "budget_total_usd": {"type": ["number", "null"], "minimum": 0},
          "members": {"type": "array", "maxItems": 1000, "items": {"$ref": "#/components/schemas/TeamMember"}},
          "add_members": {"type": "array", "items": {"$ref": "#/components/schemas/TeamMember"}},
          "remove_members": {"type": "array", "items": {"$ref": "#/components/schemas/TeamMember"}}
        }
      },
      "AdminToken": {
        "type": "object", "required": ["id", "name", "role", "token_prefix", "status", "created_by", "created_at_ms"],
        "properties": {
          "id": {"type": "integer"}, "name": {"type": "string"}, "role": {"$ref": "#/components/schemas/Role"},
          "token_prefix": {"type": "string", "description": "the first characters of the secret"},
          "status": {"enum": ["active", "revoked", "expired"]},
          "expires_at_ms": {"type": ["integer", "null"]}, "revoked_at_ms": {"type": ["integer", "null"]},
          "created_by": {"type": "string"}, "created_at_ms": {"type": "integer"},
          "team_id": {"type": ["integer", "null"], "description": "a member token's team"}
        }
      },
      "AuditEntry": {
        "type": "object", "required": ["id", "time_ms", "actor", "role", "address", "action", "method", "path", "target", "status", "before", "after"],
        "properties": {
          "id": {"type": "integer"}, "time_ms": {"type": "integer"},
          "actor": {"type": "string", "description": "\"master key\", \"token:NAME\", \"oidc:SUBJECT <EMAIL>\", or \"cli:ACCOUNT\" (sluice keys on the store; address \"local\", method \"CLI\")"},
          "role": {"$ref": "#/components/schemas/Role"},
          "address": {"type": "string", "description": "the client address the write came from"},
          "action": {"type": "string"}, "method": {"type": "string"}, "path": {"type": "string"},
          "target": {"type": "string", "description": "the object's admin path"}, "status": {"type": "integer"},
          "before": {"description": "the object before the write, as GET answers it (secrets masked), or null"},
          "after": {"description": "the object after it, as the write answered (secrets masked, a new secret left out), or null"}
        }
      },
      "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["message", "type", "param"], "properties": {
          "message": {"type": "string", "description": "what is wrong and what to do"},
          "type": {"type": "string", "enum": ["invalid_request_error", "server_error"]},
          "param": {"type": ["string", "null"], "description": "the refused field, e.g. rpm or allowed_models[1]"}}}}
      },
      "KeyStatus": {"type": "string", "enum": ["active", "revoked", "expired"]},
      "Key": {
        "type": "object",
        "required": ["id", "name", "key_prefix", "allowed_models", "allowed_channels", "rpm", "tpm", "max_concurrent", "budget_daily_usd", "budget_monthly_usd", "budget_total_usd", "expires_at_ms", "revoked_at_ms", "metadata", "status", "created_at_ms", "updated_at_ms", "spend"],
        "properties": {
          "id": {"type": "integer"},
          "name": {"type": "string"},
          "key_prefix": {"type": "string", "description": "the first 12 characters of the secret, to tell keys apart"},
          "allowed_models": {"type": "array", "items": {"type": "string"}, "description": "names or globs; empty: every model"},
          "allowed_channels": {"type": "array", "items": {"type": "string"}, "description": "channel names; empty: every channel"},
          "rpm": {"type": ["integer", "null"], "description": "requests per minute"},
          "tpm": {"type": ["integer", "null"], "description": "tokens per minute"},
          "max_concurrent": {"type": ["integer", "null"], "description": "requests in flight"},
          "budget_daily_usd": {"type": ["number", "null"]},
          "budget_monthly_usd": {"type": ["number", "null"]},
          "budget_total_usd": {"type": ["number", "null"]},
          "expires_at_ms": {"type": ["integer", "null"], "description": "Unix ms"},
          "revoked_at_ms": {"type": ["integer", "null"], "description": "Unix ms"},
          "metadata": {"type": "object"},
          "screening": {"type": ["string", "null"], "enum": ["off", "log", "warn", "block", null], "description": "this key's prompt-injection action; null inherits the channel's and the gateway's (the stricter of key and channel applies)"},
          "cache": {"type": ["boolean", "null"], "description": "this key's answers are cached (true) or never (false); null inherits"},
          "cache_ttl_ms": {"type": ["integer", "null"], "description": "a shorter cache TTL for this key; null inherits"},
          "allowed_tools": {"type": "array", "items": {"type": "string"}, "description": "MCP tools by namespaced name (SERVER__TOOL) or glob; empty: every tool"},
          "team_id": {"type": ["integer", "null"], "description": "the team whose limits and budgets also bound this key"},
          "status": {"$ref": "#/components/schemas/KeyStatus"},
          "created_at_ms": {"type": "integer"},
          "updated_at_ms": {"type": "integer"},
          "spend": {"type": "object", "required": ["day_usd", "month_usd", "total_usd"], "description": "UTC day and month", "properties": {
            "day_usd": {"type": "number"}, "month_usd": {"type": "number"}, "total_usd": {"type": "number"}}},
          "requests": {"type": "object", "required": ["day", "month", "total"], "description": "requests made with the key: this UTC day, this UTC month, ever (the total survives log retention)", "properties": {
            "day": {"type": "integer"}, "month": {"type": "integer"}, "total": {"type": "integer"}}}
        }
      },
      "KeyUpdate": {
        "type": "object", "additionalProperties": false,
        "description": "Give expires_at or expires_at_ms, not both; an expiry must be in the future.",
        "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 128},
          "allowed_models": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "names or globs (gpt-4o*); [] allows every model"},
          "allowed_channels": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "[] allows every channel"},
          "rpm": {"type": ["integer", "null"], "minimum": 1},
          "tpm": {"type": ["integer", "null"], "minimum": 1},
          "max_concurrent": {"type": ["integer", "null"], "minimum": 1},
          "budget_daily_usd": {"type": ["number", "null"], "minimum": 0},
          "budget_monthly_usd": {"type": ["number", "null"], "minimum": 0},
          "budget_total_usd": {"type": ["number", "null"], "minimum": 0},
          "expires_at_ms": {"type": ["integer", "null"], "description": "Unix ms"},
          "expires_at": {"type": ["string", "null"], "format": "date-time", "examples": ["2026-12-31T00:00:00Z"]},
          "metadata": {"type": "object", "description": "your own annotations, up to 16 KiB"},
          "team_id": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string"}, {"type": "null"}], "description": "the key's team, by id or name; null takes it out of its team"},
          "screening": {"type": ["string", "null"], "enum": ["off", "log", "warn", "block", null]},
          "cache": {"type": ["boolean", "null"]},
          "cache_ttl_ms": {"type": ["integer", "null"], "minimum": 1, "maximum": 31536000000},
          "allowed_tools": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "description": "MCP tools by namespaced name (github__create_issue) or glob (github__*); [] or null allows every tool"}
        }
      },
      "KeyCreate": {"allOf": [{"$ref": "#/components/schemas/KeyUpdate"}, {"required": ["name"]}]},
      "Channel": {
        "type": "object",
        "required": ["id", "name", "source", "type", "base_url", "models", "priority", "weight", "headers", "enabled", "keys"],
        "properties": {
          "id": {"type": ["integer", "null"], "description": "null for a config-file channel"},
          "name": {"type": "string"},
          "source": {"type": "string", "enum": ["store", "config"], "description": "config: defined in the config file, read-only here"},
          "type": {"$ref": "#/components/schemas/ChannelType"},
          "base_url": {"type": "string"},
          "models": {"type": "array", "items": {"type": "string"}},
          "priority": {"type": "integer"},
          "weight": {"type": "integer"},
          "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "values masked"},
          "enabled": {"type": "boolean"},
          "model_map": {"type": "object", "additionalProperties": {"type": "string"}},
          "api_version": {"type": "string"},
          "region": {"type": "string", "description": "bedrock: the AWS region requests are signed for"},
          "subscription": {"type": ["string", "null"], "enum": ["claude", "chatgpt", null], "description": "a subscription channel: its keys are the OAuth credential files Claude Code or Codex sign in with"},
          "token_url": {"type": ["string", "null"], "description": "a subscription channel: where its tokens are refreshed; an azure channel with Entra ID: its token endpoint (null: https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token)"},
          "project": {"type": "string", "description": "vertex: the Google Cloud project"},
          "location": {"type": "string", "description": "vertex: the Google Cloud location (us-central1, global)"},
          "tenant_id": {"type": "string", "description": "azure with Entra ID: the tenant (\"\": none)"},
          "client_id": {"type": "string", "description": "azure with Entra ID: the application (client) id (\"\": no Entra ID)"},
          "client_secret": {"type": "string", "description": "azure with Entra ID: masked; sealed at rest with store.secret_key"},
          "rpm": {"type": ["integer", "null"]},
          "tpm": {"type": ["integer", "null"]},
          "max_concurrent": {"type": ["integer", "null"]},
          "key_rpm": {"type": ["integer", "null"]},
          "key_tpm": {"type": ["integer", "null"]},
          "screening": {"type": ["string", "null"], "enum": ["off", "log", "warn", "block", null], "description": "this channel's prompt-injection action; null inherits the gateway's (the stricter of key and channel applies)"},
          "cache": {"type": ["boolean", "null"], "description": "answers through this channel are cached (true) or never (false); null inherits"},
          "cache_ttl_ms": {"type": ["integer", "null"], "description": "a shorter cache TTL for this channel; null inherits"},
          "keys": {"type": "array", "description": "store channels: UpstreamKey objects; config channels: {masked} only", "items": {"type": "object"}},
          "created_at_ms": {"type": "integer"},
          "updated_at_ms": {"type": "integer"}
        }
      },
      "ChannelType": {"type": "string", "enum": ["openai", "anthropic", "gemini", "azure", "openai-compatible", "mock", "bedrock", "vertex"]},
      "ChannelUpdate": {
        "type": "object", "additionalProperties": false,
        "description": "The same rules as a channel of the config file. A name the config file uses is refused (409).",
        "properties": {
          "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
          "type": {"$ref": "#/components/schemas/ChannelType"},
          "base_url": {"type": "string", "description": "http(s) API root as the provider's SDK takes it; a trailing / is removed"},
          "models": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}, "description": "names or globs"},
          "priority": {"type": "integer", "minimum": -1000000, "maximum": 1000000, "description": "lower is tried first"},
          "weight": {"type": "integer", "minimum": 0, "maximum": 1000000, "description": "share among equal priorities; 0: standby"},
          "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "replaces all extra headers; a value sent back exactly as a response masked it keeps the stored value"},
          "enabled": {"type": "boolean"},
          "model_map": {"type": ["object", "null"], "additionalProperties": {"type": "string", "minLength": 1}, "description": "client model name to upstream model name"},
          "api_version": {"type": ["string", "null"], "description": "azure api-version"},
          "region": {"type": ["string", "null"], "description": "bedrock: the AWS region (default: from a bedrock-runtime.REGION.amazonaws.com base_url)"},
          "subscription": {"type": ["string", "null"], "enum": ["claude", "chatgpt", null], "description": "claude (an anthropic channel) or chatgpt (an openai channel): its keys are the CLI's credential file (~/.claude/.credentials.json, ~/.codex/auth.json); each provider's terms govern such use"},
          "token_url": {"type": ["string", "null"], "maxLength": 2048, "description": "a subscription channel: the OAuth token endpoint (default: the provider's). An azure channel with Entra ID: its token endpoint, https (http only on a loopback host), no credentials in it (default: https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token)"},
          "tenant_id": {"type": ["string", "null"], "maxLength": 253, "description": "azure, Entra ID: the tenant, a GUID or a domain such as contoso.onmicrosoft.com (or give token_url)"},
          "client_id": {"type": ["string", "null"], "maxLength": 256, "description": "azure, Entra ID: the application (client) id; with client_secret, the channel gets one more key: the application's client-credentials token, sent as a Bearer"},
          "client_secret": {"type": ["string", "null"], "maxLength": 8192, "description": "azure, Entra ID: the application's secret; needs store.secret_key (503 without), sealed at rest as upstream keys are, answered masked; the masked value sent back keeps the stored secret. null on all four removes Entra ID"},
          "project": {"type": ["string", "null"], "description": "vertex (required there): the Google Cloud project id"},
          "location": {"type": ["string", "null"], "description": "vertex (required there): the Google Cloud location, e.g. us-central1"},
          "rpm": {"type": ["integer", "null"], "minimum": 1},
          "tpm": {"type": ["integer", "null"], "minimum": 1},
          "max_concurrent": {"type": ["integer", "null"], "minimum": 1},
          "key_rpm": {"type": ["integer", "null"], "minimum": 1},
          "key_tpm": {"type": ["integer", "null"], "minimum": 1},
          "screening": {"type": ["string", "null"], "enum": ["off", "log", "warn", "block", null]},
          "cache": {"type": ["boolean", "null"]},
          "cache_ttl_ms": {"type": ["integer", "null"], "minimum": 1, "maximum": 31536000000}
        }
      },
      "ChannelCreate": {"allOf": [{"$ref": "#/components/schemas/ChannelUpdate"}, {"required": ["name", "type", "base_url", "models"]}]},
      "McpServer": {
        "type": "object",
        "required": ["id", "name", "source", "transport", "url", "command", "headers", "timeout_ms", "state", "error", "restarts", "tools", "prompts", "resources"],
        "properties": {
          "id": {"type": ["integer", "null"], "description": "null for a server of the config file"},
          "name": {"type": "string", "description": "prefixes its tools and prompts as NAME__TOOL"},
          "source": {"type": "string", "enum": ["config", "store"]},
          "transport": {"type": "string", "enum": ["http", "stdio"]},
          "url": {"type": ["string", "null"], "description": "the Streamable HTTP endpoint; null for a stdio server"},
          "command": {"type": ["array", "null"], "items": {"type": "string"}, "description": "the stdio server's program and arguments (no shell); null for a url"},
          "headers": {"type": ["object", "null"], "additionalProperties": {"type": "string"}, "description": "sent with every request to the url, values masked (Bear…abcd); null when they cannot be decrypted with the configured store.secret_key"},
          "timeout_ms": {"type": "integer", "description": "per request to the server"},
          "state": {"type": "string", "enum": ["up", "down", "starting"]},
          "error": {"type": ["string", "null"], "description": "why it is down"},
          "restarts": {"type": "integer", "description": "times it came back after going down"},
          "tools": {"type": "array", "items": {"type": "object", "required": ["name", "description"], "properties": {
            "name": {"type": "string", "description": "as /mcp lists it: SERVER__TOOL"}, "description": {"type": "string"}}}},
          "prompts": {"type": "integer", "description": "how many prompts it offers"},
          "resources": {"type": "integer", "description": "how many resources it offers"}
        }
      },
      "McpServerCreate": {
        "type": "object", "required": ["name"], "additionalProperties": false,
        "description": "exactly one of url or command",
        "properties": {
          "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "description": "no \"__\" and no final '_'; unique among the config's and the store's servers"},
          "url": {"type": "string", "description": "http:// or https://, no user:password@ (send credentials in headers), at most 2048 bytes"},
          "command": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 64},
          "headers": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 32, "description": "url servers only; values without control characters, at most 8192 bytes each; needs store.secret_key (503 without)"},
          "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 3600000, "default": 30000}
        }
      },
      "McpServerUpdate": {
        "type": "object", "additionalProperties": false,
        "description": "any subset; url makes it an HTTP server, command a stdio one. A header value sent back masked as GET showed it keeps its stored value; headers null removes them all",
        "properties": {
          "name": {"type": "string"},
          "url": {"type": "string"},
          "command": {"type": "array", "items": {"type": "string"}},
          "headers": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
          "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 3600000}
        }
      },
      "UpstreamKey": {
        "type": "object",
        "required": ["id", "channel_id", "label", "masked", "state", "disabled_reason", "cooldown_until_ms", "created_at_ms", "updated_at_ms"],
        "properties": {
          "id": {"type": "integer"},
          "channel_id": {"type": "integer"},
          "label": {"type": "string"},
          "masked": {"type": ["string", "null"], "description": "the secret masked (sk-…yz); null when it cannot be decrypted with the configured store.secret_key"},
          "state": {"type": "string", "enum": ["active", "disabled"]},
          "disabled_reason": {"type": "string"},
          "cooldown_until_ms": {"type": ["integer", "null"]},
          "created_at_ms": {"type": "integer"},
          "updated_at_ms": {"type": "integer"}
        }
      },
      "UpstreamKeyUpdate": {
        "type": "object", "additionalProperties": false,
        "properties": {
          "secret": {"type": ["string", "object"], "minLength": 1, "description": "the provider's API key (bedrock: ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]; vertex: the service account's JSON key itself); write-only. A subscription channel's key is the CLI's credential file, as a JSON object or its text (sealed, masked as {credential})"},
          "label": {"type": "string", "maxLength": 128}
        }
      },
      "UpstreamKeyCreate": {"allOf": [{"$ref": "#/components/schemas/UpstreamKeyUpdate"}, {"required": ["secret"]}]},
      "UpstreamKeyHealth": {
        "type": "object",
        "required": ["ref", "channel", "masked", "source", "state"],
        "properties": {
          "ref": {"type": "string", "description": "stable id of the key, for the disable/enable/probe calls"},
          "channel": {"type": "string"},
          "masked": {"type": "string"},
          "source": {"type": "string", "enum": ["config", "store"]},
          "store_id": {"type": ["integer", "null"], "description": "the upstream key id of a store channel's key"},
          "state": {"type": "string", "enum": ["active", "cooling", "disabled"]},
          "manual": {"type": "boolean", "description": "disabled by hand: probes leave it disabled"},
          "cooldown_until_ms": {"type": ["integer", "null"]},
          "reason": {"type": "string", "description": "why it is cooling or disabled; a subscription key whose refresh token was refused says to sign in again"},
          "subscription": {"type": ["string", "null"], "description": "claude or chatgpt for a subscription channel's key"},
          "usage": {"type": ["number", "null"], "description": "a subscription key: the most used usage window as its rate-limit headers last reported it, 0 to 1"},
          "successes": {"type": "integer"},
          "failures": {"type": "integer"},
          "ttfb_ewma_ms": {"type": ["number", "null"], "description": "moving average of the key's time to first byte (null until measured); routing.balance: latency ranks by it"},
          "error_ewma": {"type": "number", "description": "moving average of the key's failed attempts, 0 to 1"},
          "channel_ttfb_ewma_ms": {"type": ["number", "null"], "description": "the same for the key's channel"},
          "channel_error_ewma": {"type": "number", "description": "the same for the key's channel"}
        }
      },
      "LogEntry": {
        "type": "object",
        "properties": {
          "id": {"type": "integer"},
          "time_ms": {"type": "integer"},
          "request_id": {"type": "string"},
          "virtual_key_id": {"type": ["integer", "null"], "description": "null: the master key, or a request refused before its key was known"},
          "channel": {"type": "string"},
          "upstream_key": {"type": "string", "description": "masked"},
          "model": {"type": "string"},
          "status": {"type": "integer"},
          "stream": {"type": "boolean"},
          "attempts": {"type": "array", "description": "every upstream try, in order; the last one answered", "items": {"type": "object", "properties": {
            "channel": {"type": "string"},
            "key": {"type": "string", "description": "the upstream key's id, masked"},
            "status": {"type": "integer", "description": "the upstream's HTTP status (0: no response)"},
            "error": {"type": ["string", "null"], "description": "why the attempt failed"}}}},
          "ttfb_ms": {"type": "integer"},
          "duration_ms": {"type": "integer"},
          "input_tokens": {"type": "integer", "description": "every prompt token, cache reads and writes included"},
          "output_tokens": {"type": "integer", "description": "every answer token, reasoning included"},
          "cached_tokens": {"type": "integer", "description": "of input_tokens, read from a prompt cache"},
          "cache_write_tokens": {"type": "integer", "description": "of input_tokens, written to a prompt cache (Anthropic cache_creation_input_tokens)"},
          "reasoning_tokens": {"type": "integer", "description": "of output_tokens, spent on reasoning"},
          "cost_usd": {"type": "number"},
          "client_addr": {"type": "string"},
          "user_agent": {"type": "string"},
          "screening": {"type": ["array", "null"], "description": "the prompt-injection screen's verdict on each part it scored (screening.scope), in request order; null when the request was not screened (a request's last 32 tool results are scored)", "items": {"type": "object", "required": ["part", "score", "flagged"], "properties": {
            "part": {"type": "string", "enum": ["user", "tool"], "description": "the last user turn, or a tool result / function output"},
            "path": {"type": "string", "description": "where the part sits in the request, e.g. messages[2] or contents[1].parts[0]"},
            "score": {"type": "number", "description": "the detector's score, 0 to 1"},
            "flagged": {"type": "boolean", "description": "score at or above the threshold, or a deny pattern matched"}}}}
        }
      },
      "LogDetail": {
        "allOf": [{"$ref": "#/components/schemas/LogEntry"}, {
          "type": "object", "required": ["virtual_key_name", "request_body", "response_body"],
          "properties": {
            "virtual_key_name": {"type": ["string", "null"], "description": "null without a key, or when the key was deleted"},
            "request_body": {"type": ["string", "null"], "description": "as sent upstream (after redaction), cut to store.log_body_max_bytes; null unless store.log_bodies is on"},
            "response_body": {"type": ["string", "null"], "description": "as the client got it (SSE text for a stream), cut the same way; null unless store.log_bodies is on"}}}]
      },
      "Percentiles": {
        "type": "object", "required": ["p50", "p95", "p99"], "description": "ms, nearest rank; null when no request succeeded",
        "properties": {"p50": {"type": ["integer", "null"]}, "p95": {"type": ["integer", "null"]}, "p99": {"type": ["integer", "null"]}}
      },
      "StatsCounts": {
        "type": "object", "required": ["requests", "errors", "input_tokens", "output_tokens", "cost_usd"],
        "properties": {
          "requests": {"type": "integer"},
          "errors": {"type": "integer", "description": "status >= 400"},
          "input_tokens": {"type": "integer"},
          "output_tokens": {"type": "integer"},
          "cost_usd": {"type": "number"}}
      },
      "StatsGroup": {
        "allOf": [{"$ref": "#/components/schemas/StatsCounts"}, {
          "type": "object", "required": ["name", "latency_ms"],
          "properties": {
            "name": {"type": "string"},
            "latency_ms": {"type": "object", "required": ["p50", "p95"], "properties": {"p50": {"type": ["integer", "null"]}, "p95": {"type": ["integer", "null"]}}}}}]
      },
      "Stats": {
        "type": "object", "required": ["since_ms", "until_ms", "step_s", "sampled", "series", "totals", "by_channel", "by_model", "by_key"],
        "properties": {
          "since_ms": {"type": "integer"},
          "until_ms": {"type": "integer"},
          "step_s": {"type": "integer"},
          "sampled": {"type": "boolean", "description": "true: the percentiles come from 1 request in N"},
          "series": {"type": "array", "description": "every bucket, oldest first", "items": {"allOf": [{"$ref": "#/components/schemas/StatsCounts"}, {
            "type": "object", "required": ["t_ms", "ttfb_ms", "latency_ms"],
            "properties": {
              "t_ms": {"type": "integer", "description": "start of the bucket, Unix ms"},
              "ttfb_ms": {"$ref": "#/components/schemas/Percentiles"},
              "latency_ms": {"$ref": "#/components/schemas/Percentiles"}}}]}},
          "totals": {"allOf": [{"$ref": "#/components/schemas/StatsCounts"}, {
            "type": "object", "required": ["error_rate", "requests_per_s", "ttfb_ms", "latency_ms"],
            "properties": {
              "error_rate": {"type": "number", "description": "errors / requests; 0 without requests"},
              "requests_per_s": {"type": "number", "description": "requests / the window's length"},
              "ttfb_ms": {"$ref": "#/components/schemas/Percentiles"},
              "latency_ms": {"$ref": "#/components/schemas/Percentiles"}}}]},
          "by_channel": {"type": "array", "description": "the 20 channels with the most requests", "items": {"$ref": "#/components/schemas/StatsGroup"}},
          "by_model": {"type": "array", "description": "the 20 models with the most requests", "items": {"$ref": "#/components/schemas/StatsGroup"}},
          "by_key": {"type": "array", "description": "the 20 virtual keys with the most requests; id null: the master key (and requests refused before a key was known); name null: no key, or a deleted one", "items": {"allOf": [
            {"$ref": "#/components/schemas/StatsGroup"},
            {"type": "object", "required": ["id"], "properties": {"id": {"type": ["integer", "null"]}, "name": {"type": ["string", "null"]}}}]}}
        }
      },
      "UsageRow": {
        "type": "object",
        "required": ["requests", "errors", "input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd"],
        "properties": {
          "day_ms": {"type": "integer", "description": "start of the UTC day; when grouped by day"},
          "model": {"type": "string", "description": "when grouped by model"},
          "channel": {"type": "string", "description": "when grouped by channel"},
          "virtual_key_id": {"type": ["integer", "null"], "description": "when grouped by key; null: the master key"},
          "virtual_key_name": {"type": ["string", "null"], "description": "when grouped by key; null: the master key, or a deleted key"},
          "team_id": {"type": ["integer", "null"], "description": "when grouped by team; null: keys without a team, and the master key"},
          "team_name": {"type": ["string", "null"], "description": "when grouped by team"},
          "requests": {"type": "integer"},
          "errors": {"type": "integer", "description": "status >= 400"},
          "input_tokens": {"type": "integer"},
          "output_tokens": {"type": "integer"},
          "cached_tokens": {"type": "integer"},
          "cache_write_tokens": {"type": "integer"},
          "reasoning_tokens": {"type": "integer"},
          "cost_usd": {"type": "number"}
        }
      }
    }
  }
})json";

}  // namespace

std::string_view openApiDocument() { return kDocument; }

}  // namespace sluice::admin
