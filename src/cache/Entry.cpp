#include "cache/Entry.hpp"

namespace sluice::cache {

using providers::FinishReason;
using providers::Part;
using providers::Usage;

namespace {

constexpr unsigned char kMagic = 0xC5;
constexpr unsigned char kVersion = 1;
constexpr std::size_t kMaxParts = 1u << 16;

void putVar(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void putSigned(std::string& out, std::int64_t v) {  // zigzag
  putVar(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void putStr(std::string& out, std::string_view s) {
  putVar(out, s.size());
  out.append(s);
}
void putUsage(std::string& out, const Usage& u) {
  for (auto x : {u.input, u.output, u.cached, u.cache_creation, u.reasoning}) putSigned(out, x);
}

struct Reader {
  std::string_view in;
  bool ok = true;

  std::uint64_t var() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in.empty()) break;
      auto b = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  std::int64_t sig() {
    auto z = var();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  std::string str() {
    auto n = var();
    if (!ok || n > in.size()) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  Usage usage() {
    Usage u;
    u.input = sig();
    u.output = sig();
    u.cached = sig();
    u.cache_creation = sig();
    u.reasoning = sig();
    return u;
  }
};

}  // namespace

std::string serializeEntry(const Entry& e) {
  const auto& r = e.response;
  std::string out;
  std::size_t guess = 64 + r.id.size() + r.model.size();
  for (const auto& p : r.content) guess += 16 + p.text.size() + p.arguments.size() + p.signature.size() + p.data.size();
  out.reserve(guess);
  out += static_cast<char>(kMagic);
  out += static_cast<char>(kVersion);
  putVar(out, static_cast<std::uint64_t>(e.status));
  putSigned(out, e.stored_at_ms);
  putStr(out, r.id);
  putStr(out, r.model);
  putSigned(out, r.created);
  putVar(out, static_cast<std::uint64_t>(r.finish));
  putStr(out, r.stop_sequence);
  putUsage(out, r.usage);
  putUsage(out, e.start_usage);
  putVar(out, r.content.size());
  for (std::size_t i = 0; i < r.content.size(); ++i) {
    const auto& p = r.content[i];
    putVar(out, static_cast<std::uint64_t>(p.kind));
    putStr(out, p.text);
    putStr(out, p.data);
    putStr(out, p.id);
    putStr(out, p.name);
    putStr(out, p.arguments);
    putStr(out, p.signature);
    const auto* pieces = i < e.pieces.size() ? &e.pieces[i] : nullptr;
    putVar(out, pieces ? pieces->size() : 0);
    if (pieces)
      for (auto n : *pieces) putVar(out, n);
  }
  return out;
}

std::optional<Entry> parseEntry(std::string_view bytes) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != kMagic ||
      static_cast<unsigned char>(bytes[1]) != kVersion)
    return std::nullopt;
  Reader rd{bytes.substr(2)};
  Entry e;
  auto& r = e.response;
  e.status = static_cast<int>(rd.var());
  e.stored_at_ms = rd.sig();
  r.id = rd.str();
  r.model = rd.str();
  r.created = rd.sig();
  auto finish = rd.var();
  if (finish > static_cast<std::uint64_t>(FinishReason::Other)) return std::nullopt;
  r.finish = static_cast<FinishReason>(finish);
  r.stop_sequence = rd.str();
  r.usage = rd.usage();
  e.start_usage = rd.usage();
  auto n = rd.var();
  if (!rd.ok || n > kMaxParts) return std::nullopt;
  r.content.reserve(n);
  e.pieces.reserve(n);
  for (std::uint64_t i = 0; i < n && rd.ok; ++i) {
    Part p;
    auto kind = rd.var();
    if (kind > static_cast<std::uint64_t>(Part::Kind::RedactedReasoning)) return std::nullopt;
    p.kind = static_cast<Part::Kind>(kind);
    p.text = rd.str();
    p.data = rd.str();
    p.id = rd.str();
    p.name = rd.str();
    p.arguments = rd.str();
    p.signature = rd.str();
    auto np = rd.var();
    if (!rd.ok || np > rd.in.size()) return std::nullopt;  // each piece takes at least a byte
    std::vector<std::uint32_t> pieces;
    pieces.reserve(np);
    std::uint64_t sum = 0;
    for (std::uint64_t j = 0; j < np; ++j) {
      auto len = rd.var();
      sum += len;
      pieces.push_back(static_cast<std::uint32_t>(len));
    }
    const auto& body = p.kind == Part::Kind::ToolCall ? p.arguments : p.text;
    if (np && sum != body.size()) return std::nullopt;
    r.content.push_back(std::move(p));
    e.pieces.push_back(std::move(pieces));
  }
  if (!rd.ok || !rd.in.empty()) return std::nullopt;
  return e;
}

std::size_t Entry::byteSize() const {
  // The serialized size, computed without serializing: strings plus their varint overheads.
  std::size_t n = 48 + response.id.size() + response.model.size() + response.stop_sequence.size();
  for (std::size_t i = 0; i < response.content.size(); ++i) {
    const auto& p = response.content[i];
    n += 16 + p.text.size() + p.data.size() + p.id.size() + p.name.size() + p.arguments.size() + p.signature.size();
    if (i < pieces.size()) n += pieces[i].size() * 2;
  }
  return n;
}

}  // namespace sluice::cache
