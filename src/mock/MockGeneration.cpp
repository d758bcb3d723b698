#include "mock/MockGeneration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

namespace sluice::mock {

namespace {

constexpr std::array<std::string_view, 12> kWords = {"Hello", "from", "sluice", "mock.",      "This", "is",
                                                     "a",     "deterministic", "answer", "for", "your", "request."};

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }()};
  return engine;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::string_view mockWord(std::size_t i) { return kWords[i % kWords.size()]; }

std::string Generation::piece(std::size_t i) const {
  if (last_piece && pieces > 0 && i == pieces - 1) return *last_piece;
  std::string out;
  if (script) {
    if (i < script->size()) out = (*script)[i];
  } else {
    if (i > 0) out.push_back(' ');
    out.append(mockWord(i));
  }
  if (out.size() < piece_bytes) out.append(piece_bytes - out.size(), '.');
  return out;
}

std::size_t Generation::tokensPerChoice() const {
  if (!hasToolCalls()) return pieces;
  std::size_t n = 0;
  for (const auto& c : tools->calls)
    n += static_cast<std::size_t>(estimateTokens(c.name) + estimateTokens(c.arguments));
  return std::max<std::size_t>(n, 1);
}

std::string Generation::text() const {
  std::string out;
  for (std::size_t i = 0; i < pieces; ++i) out += piece(i);
  return out;
}

namespace {

Generation limitGeneration(Generation g, std::optional<std::int64_t> max_tokens, const std::vector<std::string>& stop) {
  const std::size_t chunks = g.pieces;
  if (max_tokens && *max_tokens >= 0 && static_cast<std::uint64_t>(*max_tokens) < chunks) {
    g.pieces = static_cast<std::size_t>(*max_tokens);
    g.truncated_by_length = true;
  }
  bool any_stop = std::any_of(stop.begin(), stop.end(), [](const std::string& s) { return !s.empty(); });
  if (!any_stop || g.pieces == 0) return g;

  const std::string full = g.text();
  std::size_t cut = std::string::npos;
  for (const auto& s : stop) {
    if (s.empty()) continue;
    const std::size_t at = full.find(s);
    if (at < cut) {
      cut = at;
      g.stop_sequence = s;
    }
  }
  if (cut == std::string::npos) return g;

  // The stop sequence itself is not part of the answer, as with OpenAI.
  g.truncated_by_length = false;
  std::size_t acc = 0;
  for (std::size_t i = 0; i < g.pieces; ++i) {
    std::string p = g.piece(i);
    if (acc + p.size() <= cut) {
      acc += p.size();
      continue;
    }
    std::string partial = p.substr(0, cut - acc);
    if (partial.empty()) {
      g.pieces = i;
    } else {
      g.pieces = i + 1;
      g.last_piece = std::move(partial);
    }
    break;
  }
  return g;
}

}  // namespace

Generation planGeneration(std::size_t chunks, std::optional<std::int64_t> max_tokens,
                          const std::vector<std::string>& stop, int choices) {
  Generation g;
  g.choices = std::max(1, choices);
  g.pieces = chunks;
  return limitGeneration(std::move(g), max_tokens, stop);
}

Generation planReply(std::string_view text, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                     const std::vector<std::string>& stop, int choices) {
  Generation g;
  g.choices = std::max(1, choices);
  auto pieces = std::make_shared<std::vector<std::string>>(splitText(text, chunks));
  g.pieces = pieces->size();
  g.script = std::move(pieces);
  return limitGeneration(std::move(g), max_tokens, stop);
}

Generation planContinuation(std::string_view partial, std::size_t chunks, std::optional<std::int64_t> max_tokens,
                            const std::vector<std::string>& stop, int choices) {
  auto trimmed = [](std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  const std::string_view want = trimmed(partial);
  Generation whole;
  whole.pieces = chunks;
  std::string said;
  for (std::size_t k = 0; k <= chunks; ++k) {
    if (trimmed(said) == want) {
      Generation g;
      g.choices = std::max(1, choices);
      auto rest = std::make_shared<std::vector<std::string>>();
      for (std::size_t i = k; i < chunks; ++i) rest->push_back(whole.piece(i));
      g.pieces = rest->size();
      g.script = std::move(rest);
      return limitGeneration(std::move(g), max_tokens, stop);
    }
    if (k == chunks || said.size() > want.size()) break;
    said += whole.piece(k);
  }
  return planGeneration(chunks, max_tokens, stop, choices);
}

Generation planToolCalls(std::vector<ToolCall> calls, std::size_t chunks, int choices) {
  Generation g;
  g.choices = std::max(1, choices);
  auto set = std::make_shared<ToolCalls>();
  const std::size_t per_call = std::clamp<std::size_t>(chunks, 1, 4);
  for (std::size_t j = 0; j < calls.size(); ++j) {
    auto& c = calls[j];
    c.deltas = splitText(c.arguments, per_call);
    if (c.deltas.empty()) c.deltas.emplace_back();
    for (std::size_t d = 0; d < c.deltas.size(); ++d) set->steps.emplace_back(j, d);
  }
  set->calls = std::move(calls);
  g.pieces = set->steps.size();
  g.tools = std::move(set);
  return g;
}

namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

std::vector<std::string> splitText(std::string_view text, std::size_t n) {
  std::vector<std::size_t> starts;  // byte offset of every code point
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!continuation(text[i])) starts.push_back(i);
  std::vector<std::string> out;
  const std::size_t points = starts.size();
  if (n == 0 || points == 0) return out;
  n = std::min(n, points);
  out.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t a = starts[points * k / n];
    const std::size_t b = k + 1 == n ? text.size() : starts[points * (k + 1) / n];
    out.emplace_back(text.substr(a, b - a));
  }
  return out;
}

std::string_view utf8Prefix(std::string_view text, std::size_t n) {
  std::size_t points = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (continuation(text[i])) continue;
    if (points == n) return text.substr(0, i);
    ++points;
  }
  return text;
}

std::int64_t estimateTokens(std::string_view text) {
  return static_cast<std::int64_t>((text.size() + 3) / 4);
}

std::vector<float> embeddingVector(std::string_view text, int dimensions) {
  const std::size_t n = static_cast<std::size_t>(std::max(1, dimensions));
  std::vector<float> v(n);
  const std::uint64_t seed = fnv1a(text);
  double norm = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = splitmix64(seed ^ splitmix64(i));
    // 53 random bits -> [-1, 1)
    double x = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
    v[i] = static_cast<float>(x);
    norm += x * x;
  }
  norm = std::sqrt(norm);
  if (norm > 0)
    for (auto& x : v) x = static_cast<float>(x / norm);
  return v;
}

std::string base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t b = (std::uint32_t(std::uint8_t(in[i])) << 16) | (std::uint32_t(std::uint8_t(in[i + 1])) << 8) |
                      std::uint32_t(std::uint8_t(in[i + 2]));
    out.push_back(kAlphabet[(b >> 18) & 63]);
    out.push_back(kAlphabet[(b >> 12) & 63]);
    out.push_back(kAlphabet[(b >> 6) & 63]);
    out.push_back(kAlphabet[b & 63]);
  }
  std::size_t rest = in.size() - i;
  if (rest == 1) {
    std::uint32_t b = std::uint32_t(std::uint8_t(in[i])) << 16;
    out.push_back(kAlphabet[(b >> 18) & 63]);
    out.push_back(kAlphabet[(b >> 12) & 63]);
    out.append("==");
  } else if (rest == 2) {
    std::uint32_t b = (std::uint32_t(std::uint8_t(in[i])) << 16) | (std::uint32_t(std::uint8_t(in[i + 1])) << 8);
    out.push_back(kAlphabet[(b >> 18) & 63]);
    out.push_back(kAlphabet[(b >> 12) & 63]);
    out.push_back(kAlphabet[(b >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

std::string base64Floats(const std::vector<float>& v) {
  std::string bytes;
  bytes.resize(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &v[i], 4);
    bytes[i * 4 + 0] = static_cast<char>(u & 0xff);
    bytes[i * 4 + 1] = static_cast<char>((u >> 8) & 0xff);
    bytes[i * 4 + 2] = static_cast<char>((u >> 16) & 0xff);
    bytes[i * 4 + 3] = static_cast<char>((u >> 24) & 0xff);
  }
  return base64Encode(bytes);
}

std::string randomId(std::string_view prefix, std::size_t n) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out(prefix);
  auto& e = rng();
  std::uint64_t bits = 0;
  int left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (left == 0) {
      bits = e();
      left = 10;  // 6 bits each; modulo bias over 62 is irrelevant for ids
    }
    out.push_back(kAlnum[(bits & 63) % 62]);
    bits >>= 6;
    --left;
  }
  return out;
}

double randomUnit() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng()); }

}  // namespace sluice::mock
