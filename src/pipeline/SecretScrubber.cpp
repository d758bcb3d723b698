#include "pipeline/SecretScrubber.hpp"

#include <algorithm>
#include <cctype>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <unordered_map>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "config/Config.hpp"
#include "cloud/SigV4.hpp"
#include "core/JsonText.hpp"

namespace sluice::pipeline {

// The search runs three filters before it compares a whole pattern, so a text with no secret in
// it costs one bitmap probe per byte however many keys there are: the first two bytes (a 64 Ki
// bit map), then the first eight (a sorted list), then one hash lookup per distinct pattern
// length (keys of one provider share a length, so there are few).
struct SecretScrubber::Index {
  std::vector<std::string> patterns;  // every form of every secret
  std::vector<std::string> masks;
  std::unordered_map<std::string_view, std::size_t> mask_of;  // pattern -> masks index
  std::array<std::uint64_t, 1024> first2{};                   // bit (b0 << 8 | b1)
  std::vector<std::uint64_t> first8;                          // sorted, unique
  std::vector<std::size_t> lengths;                           // distinct, longest first

  static std::uint64_t load8(const char* p) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static unsigned pair(const char* p) {
    return static_cast<unsigned>(static_cast<unsigned char>(p[0])) << 8 | static_cast<unsigned char>(p[1]);
  }
};

namespace {

// The secret as a JSON string literal's content shows it; `slash`: '/' written as "\/" too.
std::string jsonEscaped(std::string_view s, bool slash) {
  std::string quoted;
  appendJsonString(quoted, s);
  std::string out(quoted, 1, quoted.size() - 2);
  if (!slash) return out;
  std::string escaped;
  for (char c : out) {
    if (c == '/') escaped.push_back('\\');
    escaped.push_back(c);
  }
  return escaped;
}

// Every byte outside RFC 3986's unreserved set as %XX, in upper- or lower-case hex.
std::string percentEncoded(std::string_view s, bool upper) {
  boost::urls::encoding_opts opt;
  opt.lower_case = !upper;
  return boost::urls::encode(s, boost::urls::unreserved_chars, opt);
}

bool credentialHeader(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::string_view w : {"auth", "key", "token", "secret", "cookie", "password"})
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

SecretScrubber::SecretScrubber(const std::vector<std::pair<std::string, std::string>>& secrets) {
  auto ix = std::make_shared<Index>();
  std::vector<std::pair<std::string, std::size_t>> forms;
  for (const auto& [secret, mask] : secrets) {
    if (secret.size() < kMinSecretBytes) continue;
    const std::size_t m = ix->masks.size();
    ix->masks.push_back(mask);
    for (std::string f : {secret, jsonEscaped(secret, false), jsonEscaped(secret, true), percentEncoded(secret, true),
                          percentEncoded(secret, false)})
      forms.emplace_back(std::move(f), m);
  }
  if (forms.empty()) return;
  // Patterns first, views into them after: the vector does not move again.
  ix->patterns.reserve(forms.size());
  for (auto& f : forms) ix->patterns.push_back(std::move(f.first));
  for (std::size_t i = 0; i < forms.size(); ++i) {
    const std::string& p = ix->patterns[i];
    if (!ix->mask_of.emplace(std::string_view(p), forms[i].second).second) continue;  // a form seen already
    const unsigned b = Index::pair(p.data());
    ix->first2[b >> 6] |= std::uint64_t{1} << (b & 63);
    ix->first8.push_back(Index::load8(p.data()));
    ix->lengths.push_back(p.size());
  }
  std::sort(ix->first8.begin(), ix->first8.end());
  ix->first8.erase(std::unique(ix->first8.begin(), ix->first8.end()), ix->first8.end());
  std::sort(ix->lengths.begin(), ix->lengths.end(), std::greater<>());
  ix->lengths.erase(std::unique(ix->lengths.begin(), ix->lengths.end()), ix->lengths.end());
  index_ = std::move(ix);
}

SecretScrubber SecretScrubber::fromConfig(const config::Config& cfg) {
  std::vector<std::pair<std::string, std::string>> secrets;
  auto add = [&](std::string_view s) {
    if (s.size() >= kMinSecretBytes) secrets.emplace_back(std::string(s), config::maskSecret(s));
  };
  for (const auto& ch : cfg.channels) {
    for (const auto& k : ch.keys) {
      add(k);
      // An AWS key's parts travel apart (the secret signs, the session token is a header): each
      // is a secret of its own.
      if (ch.type == config::ChannelType::Bedrock) {
        if (auto creds = cloud::parseAwsKey(k)) {
          add(creds->secret_access_key);
          add(creds->session_token);
        }
      }
    }
    add(ch.client_secret);  // azure Entra ID
    for (const auto& [name, value] : ch.headers) {
      if (!credentialHeader(name)) continue;
      add(value);
      std::string_view v = value;
      for (std::string_view scheme : {"Bearer ", "Basic "})
        if (v.size() > scheme.size() && std::equal(scheme.begin(), scheme.end(), v.begin(), [](char a, char b) {
              return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
            }))
          add(v.substr(scheme.size()));
    }
  }
  return SecretScrubber(secrets);
}

std::size_t SecretScrubber::find(std::string_view text, std::size_t from, std::size_t& len,
                                 const std::string*& mask) const {
  const Index& ix = *index_;
  if (text.size() < kMinSecretBytes) return std::string_view::npos;
  const char* d = text.data();
  const std::size_t last = text.size() - kMinSecretBytes;
  for (std::size_t i = from; i <= last; ++i) {
    const unsigned b = Index::pair(d + i);
    if (!(ix.first2[b >> 6] >> (b & 63) & 1)) continue;
    if (!std::binary_search(ix.first8.begin(), ix.first8.end(), Index::load8(d + i))) continue;
    for (std::size_t l : ix.lengths) {
      if (l > text.size() - i) continue;
      auto it = ix.mask_of.find(text.substr(i, l));
      if (it == ix.mask_of.end()) continue;
      len = l;
      mask = &ix.masks[it->second];
      return i;
    }
  }
  return std::string_view::npos;
}

bool SecretScrubber::contains(std::string_view text) const {
  if (!index_) return false;
  std::size_t len = 0;
  const std::string* mask = nullptr;
  return find(text, 0, len, mask) != std::string_view::npos;
}

bool SecretScrubber::scrub(std::string& text) const {
  if (!index_) return false;
  std::size_t len = 0;
  const std::string* mask = nullptr;
  std::size_t at = find(text, 0, len, mask);
  if (at == std::string_view::npos) return false;
  std::string out;
  out.reserve(text.size());
  std::size_t done = 0;
  while (at != std::string_view::npos) {
    out.append(text, done, at - done).append(*mask);
    done = at + len;
    at = find(text, done, len, mask);
  }
  out.append(text, done, std::string::npos);
  text = std::move(out);
  return true;
}

std::string SecretScrubber::scrubbed(std::string_view text) const {
  std::string out(text);
  scrub(out);
  return out;
}

}  // namespace sluice::pipeline
