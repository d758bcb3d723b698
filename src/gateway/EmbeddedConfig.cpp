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
  // A provider's channel when its key is in the environment: the key stays a ${VAR} reference.
  struct Provider {
    const char* env;
    const char* name;
    const char* base_url;
    const char* models;
  };
  static constexpr Provider kProviders[] = {
      {"OPENAI_API_KEY", "openai", "https://api.openai.com/v1",
       R"("gpt-*", "o1*", "o3*", "o4*", "chatgpt-*", "text-embedding-*", "omni-moderation-*")"},
      {"ANTHROPIC_API_KEY", "anthropic", "https://api.anthropic.com", R"("claude-*")"},
      {"GEMINI_API_KEY", "gemini", "https://generativelanguage.googleapis.com", R"("gemini-*")"},
  };
  for (const auto& p : kProviders) {
    const char* k = std::getenv(p.env);
    if (!k || !*k) continue;
    y += fmt::format(
        "  - name: {0}\n    type: {0}\n    base_url: \"{1}\"\n    keys: [\"${{{2}}}\"]\n    models: [{3}]\n"
        "    priority: 1\n",
        p.name, p.base_url, p.env, p.models);
  }
  return y;
}

}  // namespace sluice::gateway
