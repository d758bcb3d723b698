// SecretScrubber: replaces every configured upstream secret in a text with its masked form
// (config::maskSecret, as the admin API shows keys), so a provider that echoes the credential it
// was given ("Incorrect API key provided: sk-...") cannot carry it into an answer, a log line, a
// request-log row or a key's health reason. Built once per config snapshot; immutable and cheap
// to copy (shared index); any thread may use it.
//
// Where it runs (gateway/Proxy.cpp, Probe.cpp): where upstream text comes in — an upstream
// error body (every message, attempt list and health reason made from it follows) and the
// headers of a relayed error — probe answers, and the logged bodies of a finished request
// before it is queued. Successful answers, streamed or not, pass untouched.
//
// A secret matches as it is, JSON-escaped and percent-encoded. Secrets shorter than
// kMinSecretBytes are left alone: a string that short occurs in ordinary text too often, and
// masking it would garble messages (no provider issues keys that short).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::config {
struct Config;
}

namespace sluice::pipeline {

class SecretScrubber {
 public:
  static constexpr std::size_t kMinSecretBytes = 8;

  SecretScrubber() = default;  // replaces nothing
  // Each pair: a secret and the text that replaces it.
  explicit SecretScrubber(const std::vector<std::pair<std::string, std::string>>& secrets);
  // Every channel's keys, and the values of credential-like channel headers (Authorization,
  // *key*, *token*, *secret*), each replaced by config::maskSecret of it.
  static SecretScrubber fromConfig(const config::Config& cfg);

  bool empty() const { return !index_; }
  bool contains(std::string_view text) const;
  // Replaces every secret in `text` in place; true when something was replaced.
  bool scrub(std::string& text) const;
  std::string scrubbed(std::string_view text) const;

 private:
  struct Index;
  // Where the first secret at or after `from` starts (npos: none), and its pattern.
  std::size_t find(std::string_view text, std::size_t from, std::size_t& len, const std::string*& mask) const;
  std::shared_ptr<const Index> index_;
};

}  // namespace sluice::pipeline
