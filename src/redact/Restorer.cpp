#include "redact/Restorer.hpp"

#include <cstring>

#include "redact/TokenCipher.hpp"

namespace sluice::redact {

void appendJsonEscaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
}

void SealMemo::add(std::string_view token, std::string_view value) {
  if (count_ >= kMaxEntries || find(token)) return;
  if (count_ == 0) bytes_.reserve(4 * (token.size() + value.size()));
  entries_[count_++] = Entry{bytes_.size(), token.size(), value.size()};
  bytes_.append(token).append(value);
}

std::optional<std::string_view> SealMemo::find(std::string_view token) const {
  const std::string_view all(bytes_);
  for (std::size_t i = 0; i < count_; ++i) {
    const Entry& e = entries_[i];
    if (e.tokenLen == token.size() && all.substr(e.at, e.tokenLen) == token)
      return all.substr(e.at + e.tokenLen, e.valueLen);
  }
  return std::nullopt;
}

Restorer::Restorer(const TokenCipher& cipher, int jsonDepth, const SealMemo* memo)
    : cipher_(cipher), memo_(memo), depth_(jsonDepth < 0 ? 0 : (jsonDepth > 2 ? 2 : jsonDepth)) {}

bool Restorer::open(std::string& out, std::string_view token, std::string_view label, std::string_view payload) const {
  if (memo_ != nullptr)
    if (const auto v = memo_->find(token)) {
      out += *v;
      return true;
    }
  return cipher_.openInto(out, label, payload);
}

void Restorer::feed(std::string_view chunk, std::string& out) {
  if (held_.empty()) {
    process(chunk, out);
    return;
  }
  // Both buffers keep their capacity: a token held across many small deltas costs no allocation
  // per delta (and a typical token fits the first one). The joined text is only needed during
  // this call: one buffer per thread.
  thread_local std::string pending;
  pending.assign(held_);
  pending.append(chunk);
  held_.clear();
  process(pending, out);
}

void Restorer::finish(std::string& out) {
  out += held_;
  held_.clear();
}

void Restorer::process(std::string_view s, std::string& out) {
  std::size_t emitted = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    const void* hit = std::memchr(s.data() + i, '[', s.size() - i);
    if (hit == nullptr) break;
    const std::size_t j = static_cast<std::size_t>(static_cast<const char*>(hit) - s.data());
    const TokenSyntax syn = parseToken(s.substr(j));
    if (syn.state == TokenSyntax::NoMatch) {
      i = j + 1;
      continue;
    }
    out.append(s.data() + emitted, j - emitted);
    if (syn.state == TokenSyntax::Partial) {
      if (held_.capacity() < 256) held_.reserve(256);
      held_.assign(s.data() + j, s.size() - j);  // bounded by the token grammar: <= kMaxTokenLen
      return;
    }
    const std::string_view token = s.substr(j, syn.length);
    bool ok;
    if (depth_ == 0) {
      ok = open(out, token, syn.label, syn.payload);
    } else {
      scratch_.clear();
      ok = open(scratch_, token, syn.label, syn.payload);
      if (ok) {
        if (depth_ == 1) {
          appendJsonEscaped(out, scratch_);
        } else {
          std::string once;
          appendJsonEscaped(once, scratch_);
          appendJsonEscaped(out, once);
        }
      }
    }
    if (ok) {
      ++stats_.restored;
    } else {
      out.append(s.data() + j, syn.length);
      ++stats_.tampered;
    }
    emitted = i = j + syn.length;
  }
  out.append(s.data() + emitted, s.size() - emitted);
}

std::string restoreAll(std::string_view text, const TokenCipher& cipher, int jsonDepth, RestoreStats* stats,
                       const SealMemo* memo) {
  Restorer r(cipher, jsonDepth, memo);
  std::string out;
  out.reserve(text.size());
  r.feed(text, out);
  r.finish(out);
  if (stats) {
    stats->restored += r.stats().restored;
    stats->tampered += r.stats().tampered;
  }
  return out;
}

}  // namespace sluice::redact
