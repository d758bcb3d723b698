#include "gateway/Multipart.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::gateway {

namespace {

bool iequalsPrefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool boundaryChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// A parameter's value in a header value's `; key=value` list (quoted-string or token), or nullopt.
std::optional<std::string> param(std::string_view value, std::string_view key) {
  std::size_t pos = 0;
  while (pos < value.size()) {
    const auto semi = value.find(';', pos);
    if (semi == std::string_view::npos) return std::nullopt;
    std::string_view rest = trim(value.substr(semi + 1));
    if (iequalsPrefix(rest, key) && rest.size() > key.size() && rest[key.size()] == '=') {
      rest.remove_prefix(key.size() + 1);
      if (!rest.empty() && rest.front() == '"') {
        std::string out;
        for (std::size_t i = 1; i < rest.size(); ++i) {
          if (rest[i] == '\\' && i + 1 < rest.size()) {
            out.push_back(rest[++i]);
          } else if (rest[i] == '"') {
            return out;
          } else {
            out.push_back(rest[i]);
          }
        }
        return std::nullopt;  // unterminated
      }
      return std::string(trim(rest.substr(0, rest.find(';'))));
    }
    pos = semi + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> multipartBoundary(std::string_view ct) {
  if (!iequalsPrefix(trim(ct), "multipart/form-data")) return std::nullopt;
  auto b = param(ct, "boundary");
  if (!b || b->empty() || b->size() > 70 || b->back() == ' ') return std::nullopt;
  if (!std::all_of(b->begin(), b->end(), boundaryChar)) return std::nullopt;
  return b;
}

bool forEachPart(std::string_view body, std::string_view boundary, const std::function<bool(const FormPart&)>& fn) {
  const std::string delim = "--" + std::string(boundary);
  // The first delimiter: at the start, or after a preamble ending in CRLF.
  std::size_t pos = 0;
  if (body.starts_with(delim)) {
    pos = delim.size();
  } else {
    pos = body.find("\r\n" + delim);
    if (pos == std::string_view::npos) return false;
    pos += delim.size() + 2;
  }
  const std::string next = "\r\n" + delim;
  for (;;) {
    if (body.substr(pos, 2) == "--") return true;  // the close delimiter
    // Past the delimiter: optional white space, then CRLF, the part's headers and a blank line.
    const auto eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) return false;
    if (!trim(body.substr(pos, eol - pos)).empty()) return false;
    FormPart part;
    std::size_t content = eol + 2;
    if (body.substr(content, 2) == "\r\n") {
      content += 2;  // no headers at all
    } else {
      const auto headersEnd = body.find("\r\n\r\n", eol);
      if (headersEnd == std::string_view::npos) return false;
      std::string_view headers = body.substr(eol + 2, headersEnd + 2 - (eol + 2));
      content = headersEnd + 4;
      while (!headers.empty()) {
        const auto crlf = headers.find("\r\n");
        const std::string_view line = headers.substr(0, crlf);
        headers.remove_prefix(crlf == std::string_view::npos ? headers.size() : crlf + 2);
        if (iequalsPrefix(line, "content-disposition:")) {
          const std::string_view v = line.substr(20);
          if (auto n = param(v, "name")) part.name = std::move(*n);
          part.filename = param(v, "filename");
          if (!part.filename) part.filename = param(v, "filename*");
        } else if (iequalsPrefix(line, "content-type:")) {
          part.content_type = std::string(trim(line.substr(13)));
        }
      }
    }
    // The part ends at the next delimiter line: CRLF, "--", the boundary, then optional white
    // space and CRLF, or "--" for the last one. The same bytes followed by anything else are
    // content.
    std::size_t end = content;
    for (;;) {
      end = body.find(next, end);
      if (end == std::string_view::npos) return false;
      std::size_t after = end + next.size();
      if (body.substr(after, 2) == "--") break;
      while (after < body.size() && (body[after] == ' ' || body[after] == '\t')) ++after;
      if (body.substr(after, 2) == "\r\n") break;
      ++end;
    }
    part.data = body.substr(content, end - content);
    if (!fn(part)) return true;
    pos = end + next.size();
  }
}

std::optional<std::string> multipartField(std::string_view body, std::string_view boundary, std::string_view name,
                                          std::size_t max_value) {
  std::optional<std::string> out;
  forEachPart(body, boundary, [&](const FormPart& p) {
    if (p.name != name || p.filename) return true;
    if (p.data.size() <= max_value) out = std::string(p.data);
    return false;
  });
  return out;
}

}  // namespace sluice::gateway
