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

Restorer::Restorer(const TokenCipher& cipher, int jsonDepth)
    : cipher_(cipher), depth_(jsonDepth < 0 ? 0 : (jsonDepth > 2 ? 2 : jsonDepth)) {}

void Restorer::feed(std::string_view chunk, std::string& out) {
  if (held_.empty()) {
    process(chunk, out);
    return;
  }
  std::string buf = std::move(held_);
  held_.clear();
  buf.append(chunk);
  process(buf, out);
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
      held_.assign(s.data() + j, s.size() - j);  // bounded by the token grammar: <= kMaxTokenLen
      return;
    }
    bool ok;
    if (depth_ == 0) {
      ok = cipher_.openInto(out, syn.label, syn.payload);
    } else {
      scratch_.clear();
      ok = cipher_.openInto(scratch_, syn.label, syn.payload);
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

std::string restoreAll(std::string_view text, const TokenCipher& cipher, int jsonDepth, RestoreStats* stats) {
  Restorer r(cipher, jsonDepth);
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
