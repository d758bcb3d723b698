#include "gateway/EmbeddedConfig.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace sluice::gateway {

// The embedded default: the built-in mock for any model, plus a real provider channel for each
// provider key found in the environment (tried first for its own models).
std::string embeddedConfig(const std::string& mockAddr) {
  std::string y = fmt::format(R"(server:
  listen: "${{SLUICE_LISTEN:-127.0.0.1:8080}}"
auth:
  master_key: "${{SLUICE_MASTER_KEY:-{}}}"
store:
  url: "sqlite://./sluice.db"
channels:
  - name: mock
    type: mock
    base_url: "http://{}/v1"
    models: ["*"]
    priority: 100
)",
                              kDevMasterKey, mockAddr);
  if (const char* k = std::getenv("OPENAI_API_KEY"); k && *k) {
    y += R"(  - name: openai
    type: openai
    base_url: "https://api.openai.com/v1"
    keys: ["${OPENAI_API_KEY}"]
    models: ["gpt-*", "o1*", "o3*", "o4*", "chatgpt-*", "text-embedding-*", "omni-moderation-*"]
    priority: 1
)";
  }
  if (const char* k = std::getenv("ANTHROPIC_API_KEY"); k && *k) {
    y += R"(  - name: anthropic
    type: anthropic
    base_url: "https://api.anthropic.com"
    keys: ["${ANTHROPIC_API_KEY}"]
    models: ["claude-*"]
    priority: 1
)";
  }
  if (const char* k = std::getenv("GEMINI_API_KEY"); k && *k) {
    y += R"(  - name: gemini
    type: gemini
    base_url: "https://generativelanguage.googleapis.com"
    keys: ["${GEMINI_API_KEY}"]
    models: ["gemini-*"]
    priority: 1
)";
  }
  return y;
}

}  // namespace sluice::gateway
