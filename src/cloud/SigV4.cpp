#include "cloud/SigV4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/url/encode.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

namespace sluice::cloud {
namespace {

namespace urls = boost::urls;

constexpr char kHex[] = "0123456789abcdef";

std::string hex(const unsigned char* p, size_t n) {
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 0xf];
  }
  return out;
}

std::array<unsigned char, 32> hmac(std::string_view key, std::string_view data) {
  std::array<unsigned char, 32> out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &len);
  return out;
}

std::string_view asView(const std::array<unsigned char, 32>& k) {
  return {reinterpret_cast<const char*>(k.data()), k.size()};
}

// RFC 3986 percent-encoding of everything but the unreserved characters, as SigV4 wants it.
void uriEncode(std::string& out, std::string_view s) {
  urls::encode(s, urls::unreserved_chars, {}, urls::string_token::append_to(out));
}

// A query's name or value as the client meant it: %XX decoded, so encoding it again gives one
// canonical spelling; one with a malformed escape is taken as it is.
std::string uriDecode(std::string_view s) {
  auto pct = urls::make_pct_string_view(s);
  return pct ? pct->decode() : std::string(s);
}

// Header values: leading and trailing spaces trimmed, runs of spaces inside folded into one.
std::string trimValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  return out;
}

bool credentialChar(unsigned char c) {
  return c > 0x20 && c < 0x7f;
}

std::array<unsigned char, 32> signingKey(std::string_view secret, std::string_view day, const SigV4Scope& scope) {
  std::string k0 = "AWS4";
  k0 += secret;
  auto k_date = hmac(k0, day);
  auto k_region = hmac(asView(k_date), scope.region);
  auto k_service = hmac(asView(k_region), scope.service);
  return hmac(asView(k_service), "aws4_request");
}

SigV4Signature signWith(const SigV4Request& request, const AwsCredentials& credentials, const SigV4Scope& scope,
                        const std::array<unsigned char, 32>& key) {
  SigV4Signature sig;
  // Canonical headers: lower-case names, sorted; a name given more than once keeps its values in
  // the order given, joined by commas.
  std::vector<std::pair<std::string, std::string>> hs;
  hs.reserve(request.headers.size());
  for (const auto& [name, value] : request.headers) hs.emplace_back(lower(name), trimValue(value));
  std::stable_sort(hs.begin(), hs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers;
  for (size_t i = 0; i < hs.size(); ++i) {
    if (i > 0 && hs[i].first == hs[i - 1].first) {
      canonical_headers.back() = ',';
    } else {
      if (!sig.signed_headers.empty()) sig.signed_headers.push_back(';');
      sig.signed_headers += hs[i].first;
      canonical_headers += hs[i].first;
      canonical_headers.push_back(':');
    }
    canonical_headers += hs[i].second;
    canonical_headers.push_back('\n');
  }

  std::string& creq = sig.canonical_request;
  creq.reserve(256 + canonical_headers.size() + request.path.size() + request.query.size());
  creq += request.method;
  creq.push_back('\n');
  creq += sigV4CanonicalUri(request.path);
  creq.push_back('\n');
  creq += sigV4CanonicalQuery(request.query);
  creq.push_back('\n');
  creq += canonical_headers;
  creq.push_back('\n');
  creq += sig.signed_headers;
  creq.push_back('\n');
  creq += request.payload_sha256_hex;

  std::string_view day = std::string_view(scope.amz_date).substr(0, 8);
  std::string credential_scope;
  credential_scope.reserve(64);
  credential_scope.append(day)
      .append("/")
      .append(scope.region)
      .append("/")
      .append(scope.service)
      .append("/aws4_request");
  sig.string_to_sign = "AWS4-HMAC-SHA256\n" + scope.amz_date + "\n" + credential_scope + "\n" + sha256Hex(creq);
  auto mac = hmac(asView(key), sig.string_to_sign);
  sig.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + credential_scope +
                      ", SignedHeaders=" + sig.signed_headers + ", Signature=" + hex(mac.data(), mac.size());
  return sig;
}

}  // namespace

std::optional<AwsCredentials> parseAwsKey(std::string_view key) {
  AwsCredentials c;
  size_t a = key.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  c.access_key_id = key.substr(0, a);
  std::string_view rest = key.substr(a + 1);
  size_t b = rest.find(':');
  c.secret_access_key = rest.substr(0, b);
  if (b != std::string_view::npos) {
    c.session_token = rest.substr(b + 1);
    if (c.session_token.empty()) return std::nullopt;
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::nullopt;
  for (std::string_view part :
       {std::string_view(c.access_key_id), std::string_view(c.secret_access_key), std::string_view(c.session_token)}) {
    if (!std::all_of(part.begin(), part.end(), [](char ch) { return credentialChar(static_cast<unsigned char>(ch)); }))
      return std::nullopt;
  }
  // An access key id is letters and digits; a ':' in the secret would have ended it above.
  if (!std::all_of(c.access_key_id.begin(), c.access_key_id.end(),
                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; }))
    return std::nullopt;
  return c;
}

std::string sigV4CanonicalUri(std::string_view wire_path) {
  // Dot segments removed and empty segments dropped (RFC 3986 5.2.4, as AWS normalizes), then
  // every segment encoded once more.
  std::vector<std::string_view> segments;
  size_t i = 0;
  while (i <= wire_path.size()) {
    size_t j = wire_path.find('/', i);
    if (j == std::string_view::npos) j = wire_path.size();
    std::string_view seg = wire_path.substr(i, j - i);
    if (seg == "..") {
      if (!segments.empty()) segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    i = j + 1;
  }
  bool trailing_slash = !wire_path.empty() && wire_path.back() == '/';
  if (!wire_path.empty()) {
    // "/a/.." and "/a/." name a directory: keep the slash after what remains.
    std::string_view last = wire_path.substr(wire_path.rfind('/') + 1);
    if (last == "." || last == "..") trailing_slash = true;
  }
  std::string out = "/";
  for (size_t k = 0; k < segments.size(); ++k) {
    if (k > 0) out.push_back('/');
    uriEncode(out, segments[k]);
  }
  if (trailing_slash && !segments.empty()) out.push_back('/');
  return out;
}

std::string sigV4CanonicalQuery(std::string_view wire_query) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t i = 0;
  while (i < wire_query.size()) {
    size_t j = wire_query.find('&', i);
    if (j == std::string_view::npos) j = wire_query.size();
    std::string_view part = wire_query.substr(i, j - i);
    if (!part.empty()) {
      size_t eq = part.find('=');
      std::string name, value;
      uriEncode(name, uriDecode(part.substr(0, eq)));
      if (eq != std::string_view::npos) uriEncode(value, uriDecode(part.substr(eq + 1)));
      params.emplace_back(std::move(name), std::move(value));
    }
    i = j + 1;
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return hex(md, len);
}

std::string amzDate(long long epoch_seconds) {
  std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];  // room for any int the compiler imagines, not only the 16 a date needs
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec);
  return buf;
}

SigV4Signature signV4(const SigV4Request& request, const AwsCredentials& credentials, const SigV4Scope& scope) {
  return signWith(request, credentials, scope,
                  signingKey(credentials.secret_access_key, std::string_view(scope.amz_date).substr(0, 8), scope));
}

SigV4Signature SigV4Signer::sign(const SigV4Request& request, const AwsCredentials& credentials,
                                 const SigV4Scope& scope) {
  std::string_view day = std::string_view(scope.amz_date).substr(0, 8);
  std::string id;
  id.reserve(credentials.secret_access_key.size() + 64);
  id.append(credentials.secret_access_key)
      .append("\n")
      .append(day)
      .append("\n")
      .append(scope.region)
      .append("\n")
      .append(scope.service);
  if (id != cached_for_) {
    key_ = signingKey(credentials.secret_access_key, day, scope);
    cached_for_ = std::move(id);
  }
  return signWith(request, credentials, scope, key_);
}

}  // namespace sluice::cloud
