#include "http/Framing.hpp"
#include "core/Ascii.hpp"

#include <cstring>

#include <fmt/format.h>

#include <boost/beast/core/string.hpp>

#include <array>
#include <cstdio>

namespace sluice::http {

namespace {

// RFC 9110 tchar.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

}  // namespace

bool isTchar(char c) {
  return kTchar[static_cast<unsigned char>(c)];
}
bool isFieldByte(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7F);
}

namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowerCopy(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// Whether `name` is `word` once everything but letters and digits is dropped and the rest
// lower-cased: "Transfer_Encoding", "transfer---encoding" and "Transfer.Encoding" all resemble
// "transferencoding". Compared in place: this runs for every header of every request.
bool resembles(std::string_view name, std::string_view word) {
  std::size_t k = 0;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c))) continue;
    if (k == word.size() || lower(c) != word[k]) return false;
    ++k;
  }
  return k == word.size();
}

std::string byteName(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", c);
  return buf;
}

// Framing values are compared as a client writes them: `Name: value` or `Name:value`. Any other
// whitespace (a tab, two spaces, a trailing space) is something a sender had to go out of its way
// to produce and that another parser may keep as part of the value.
std::string_view framingValue(std::string_view raw) {
  if (!raw.empty() && raw.front() == ' ') raw.remove_prefix(1);
  return raw;
}

// uri-host [":" port] as RFC 3986 spells it: reg-name / IPv4 / "[" IP-literal "]". No userinfo,
// no path, no whitespace.
bool isHostByte(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c)) return true;
  return std::string_view("-._~!$&'()*+,;=%:[]").find(c) != std::string_view::npos;
}

Error badRequest(int status, std::string message) {
  return Error::client(status, "invalid_request_error", "bad_request_framing", std::move(message));
}

}  // namespace

void HeadScanner::refuse(int status, std::string message) {
  verdict_.state = HeadVerdict::State::Refused;
  verdict_.error = badRequest(status, std::move(message));
}

const HeadVerdict& HeadScanner::feed(std::string_view bytes) {
  // A line at a time: memchr finds its LF and any CR in it (the head is scanned once, in bulk,
  // rather than byte by byte).
  const char* const d = bytes.data();
  const std::size_t n = bytes.size();
  while (verdict_.state == HeadVerdict::State::Incomplete && cursor_ < n) {
    // A CR that ended the bytes seen last time must be followed by this LF.
    if (cursor_ > line_start_ && d[cursor_ - 1] == '\r' && d[cursor_] != '\n') {
      refuse(400, "a bare CR (not followed by LF) in the request head; end every line with CRLF");
      break;
    }
    const auto* nl = static_cast<const char*>(std::memchr(d + cursor_, '\n', n - cursor_));
    const std::size_t stop = nl != nullptr ? static_cast<std::size_t>(nl - d) : n;
    // Any CR before `stop` but its last byte is followed by something other than LF.
    if (const auto* cr = static_cast<const char*>(std::memchr(d + cursor_, '\r', stop - cursor_));
        cr != nullptr && static_cast<std::size_t>(cr - d) + 1 < stop) {
      refuse(400, "a bare CR (not followed by LF) in the request head; end every line with CRLF");
      break;
    }
    if (nl == nullptr) {
      cursor_ = n;  // the line goes on in bytes not here yet
      break;
    }
    if (stop == line_start_ || d[stop - 1] != '\r') {
      refuse(400, "a bare LF line ending in the request head; end every line with CRLF");
      break;
    }
    std::string_view line = bytes.substr(line_start_, stop - 1 - line_start_);
    cursor_ = stop + 1;
    if (first_line_) {
      first_line_ = false;
      requestLine(line);
    } else if (line.empty()) {
      endOfHead(cursor_);
    } else {
      fieldLine(line);
    }
    line_start_ = cursor_;
  }
  return verdict_;
}

void HeadScanner::requestLine(std::string_view line) {
  if (line.empty()) {
    refuse(400, "empty request line (a stray CRLF before the request?)");
    return;
  }
  std::size_t i = 0;
  while (i < line.size() && isTchar(line[i])) ++i;
  if (i == 0 || i == line.size() || line[i] != ' ') {
    refuse(400, "malformed request line: expected METHOD SP target SP HTTP/1.1");
    return;
  }
  const std::string_view method = line.substr(0, i);
  const std::size_t t0 = ++i;
  while (i < line.size() && line[i] > 0x20 && line[i] < 0x7F) ++i;
  if (i == t0) {
    refuse(400, "malformed request line: one space between method, target and version");
    return;
  }
  const std::string_view target = line.substr(t0, i - t0);
  if (i == line.size()) {
    refuse(400, "HTTP/0.9 requests are not supported; send HTTP/1.1");
    return;
  }
  if (line[i] != ' ') {
    refuse(400, "malformed request line: the target holds a byte that must be percent-encoded (" +
                    byteName(static_cast<unsigned char>(line[i])) + ")");
    return;
  }
  const std::string_view version = line.substr(i + 1);
  if (version.size() != 8 || !version.starts_with("HTTP/") || !isDigit(version[5]) || version[6] != '.' ||
      !isDigit(version[7])) {
    refuse(400, "malformed request line: expected METHOD SP target SP HTTP/1.1");
    return;
  }
  version_ = (version[5] - '0') * 10 + (version[7] - '0');
  if (method == "PRI" && target == "*" && version_ == 20) {
    refuse(400, "HTTP/2 with prior knowledge is not supported on this port; send HTTP/1.1");
    return;
  }
  if (version_ != 10 && version_ != 11) {
    // Made in the argument, never moved: g++ 12 warns falsely (-Warray-bounds, GCC PR 105651) on
    // an inlined move of a short std::string here.
    refuse(400, fmt::format("{} is not supported; send HTTP/1.1", version));
    return;
  }
  // Origin-form is what every client sends to a server; "*" only means something for OPTIONS;
  // absolute-form is accepted as RFC 9112 asks, as long as it names the same host as Host.
  if (target.front() == '/') return;
  if (target == "*") {
    if (method != "OPTIONS") refuse(400, "the request target * is only valid for OPTIONS");
    return;
  }
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() > scheme.size() && sluice::iequals(target.substr(0, scheme.size()), scheme)) {
      std::string_view rest = target.substr(scheme.size());
      authority_ = lowerCopy(rest.substr(0, rest.find_first_of("/?#")));
      return;
    }
  }
  refuse(400, "the request target must be a path starting with / (origin-form)");
}

void HeadScanner::fieldLine(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    refuse(400, "obsolete line folding (a header line starting with whitespace) is not accepted");
    return;
  }
  std::size_t colon = 0;
  while (colon < line.size() && isTchar(line[colon])) ++colon;
  if (colon == line.size()) {
    refuse(400, "a header line without a colon");
    return;
  }
  if (line[colon] != ':') {
    const auto c = static_cast<unsigned char>(line[colon]);
    refuse(400, c == ' ' || c == '\t' ? "whitespace between a header name and its colon"
                                      : "invalid byte " + byteName(c) + " in a header name");
    return;
  }
  if (colon == 0) {
    refuse(400, "a header line with an empty name");
    return;
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view raw = line.substr(colon + 1);
  for (char c : raw) {
    if (!isFieldByte(static_cast<unsigned char>(c))) {
      refuse(400, "control character " + byteName(static_cast<unsigned char>(c)) + " in header " + std::string(name));
      return;
    }
  }

  if (sluice::iequals(name, "content-length")) {
    if (++content_lengths_ > 1) {
      refuse(400, "more than one Content-Length header; send exactly one");
      return;
    }
    if (transfer_encodings_ > 0) {
      refuse(400, "both Transfer-Encoding and Content-Length; send only one of them");
      return;
    }
    const std::string_view v = framingValue(raw);
    bool digits = !v.empty() && v.size() <= 19;
    for (char c : v) digits = digits && isDigit(c);
    if (!digits || (v.size() > 1 && v.front() == '0')) {
      refuse(400, "invalid Content-Length \"" + std::string(v) +
                      "\": send the body size as plain decimal digits, without sign, leading zeros or spaces");
      return;
    }
    std::uint64_t n = 0;
    for (char c : v) n = n * 10 + static_cast<std::uint64_t>(c - '0');  // 19 digits fit in 64 bits
    verdict_.body = BodyFraming::Length;
    verdict_.content_length = n;
    return;
  }

  if (sluice::iequals(name, "transfer-encoding")) {
    if (++transfer_encodings_ > 1) {
      refuse(400, "more than one Transfer-Encoding header; send one: Transfer-Encoding: chunked");
      return;
    }
    if (content_lengths_ > 0) {
      refuse(400, "both Transfer-Encoding and Content-Length; send only one of them");
      return;
    }
    if (version_ == 10) {
      refuse(400, "Transfer-Encoding in an HTTP/1.0 request; use Content-Length or HTTP/1.1");
      return;
    }
    const std::string_view v = framingValue(raw);
    if (sluice::iequals(v, "chunked")) {
      verdict_.body = BodyFraming::Chunked;
      return;
    }
    // A well-formed list that ends in chunked names codings Sluice does not implement (501, as
    // RFC 9112 6.1 asks); anything else leaves the length unknown.
    std::size_t start = 0;
    bool list_ok = true;
    int chunked = 0;
    int items = 0;
    std::string_view last;
    while (start <= v.size()) {
      std::size_t comma = v.find(',', start);
      std::string_view item = v.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      bool token = !item.empty();
      for (char c : item) token = token && isTchar(c);
      list_ok = list_ok && token;
      if (sluice::iequals(item, "chunked")) ++chunked;
      ++items;
      last = item;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (list_ok && items > 1 && chunked == 1 && sluice::iequals(last, "chunked")) {
      refuse(501, "Transfer-Encoding \"" + std::string(v) +
                      "\" is not implemented; send the body with Transfer-Encoding: chunked alone");
      return;
    }
    refuse(400, "Transfer-Encoding \"" + std::string(v) +
                    "\" leaves the body length ambiguous; send Transfer-Encoding: chunked or Content-Length");
    return;
  }

  if (sluice::iequals(name, "host")) {
    if (++hosts_ > 1) {
      refuse(400, "more than one Host header; send exactly one");
      return;
    }
    const std::string_view v = framingValue(raw);
    for (char c : v) {
      if (!isHostByte(c)) {
        refuse(400, "invalid Host header \"" + std::string(v) + "\"");
        return;
      }
    }
    host_ = lowerCopy(v);
    return;
  }

  // A name another parser might normalize into a framing header ("Transfer_Encoding",
  // "Content--Length") would frame the body for it but not for us.
  const bool te = resembles(name, "transferencoding");
  if (te || resembles(name, "contentlength")) {
    refuse(400, "header name \"" + std::string(name) + "\" resembles " + (te ? "Transfer-Encoding" : "Content-Length") +
                    "; spell it exactly");
    return;
  }
}

void HeadScanner::endOfHead(std::size_t head_bytes) {
  if (version_ == 11 && hosts_ == 0) {
    refuse(400, "an HTTP/1.1 request needs a Host header");
    return;
  }
  if (authority_ && hosts_ > 0 && *authority_ != host_) {
    refuse(400,
           "the absolute-form target names host \"" + *authority_ + "\" but the Host header says \"" + host_ + "\"");
    return;
  }
  verdict_.state = HeadVerdict::State::Complete;
  verdict_.head_bytes = head_bytes;
}

HeadVerdict checkRequestHead(std::string_view bytes) {
  HeadScanner s;
  return s.feed(bytes);
}

std::optional<Error> checkChunkExtension(std::string_view extensions) {
  if (extensions.size() > kMaxChunkExtension)
    return badRequest(400, "chunk extensions longer than " + std::to_string(kMaxChunkExtension) + " bytes");
  for (char c : extensions)
    if (!isFieldByte(static_cast<unsigned char>(c)))
      return badRequest(400, "control character " + byteName(static_cast<unsigned char>(c)) + " in a chunk extension");
  return std::nullopt;
}

}  // namespace sluice::http
