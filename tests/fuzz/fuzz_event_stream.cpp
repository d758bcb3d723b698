// AWS event-stream framing (cloud/EventStream.hpp) and Bedrock's ConverseStream and Converse
// answers on it (providers/bedrock/ConverseCodec.hpp), an upstream's bytes and so untrusted, and the
// SigV4 canonical forms of a path and a query (cloud/SigV4.hpp), which a client's model name and
// query reach. Input: [split byte] [stream bytes]; the same bytes are the path and query.
// Checks: no crash; the messages and the verdict do not depend on how the bytes were split; a
// message of string headers encodes back to its own bytes; the Converse stream decoder gives the
// same events whatever the split, and an Error event when (only when) the framing fails; a decoder that failed stays
// failed; the canonical URI starts with '/', has no dot segment and only unreserved characters, '/' and %XX escapes;
// the canonical query likewise, with '=' and '&'.
#include <cctype>
#include <string>

#include "FuzzUtil.hpp"
#include "cloud/EventStream.hpp"
#include "cloud/SigV4.hpp"
#include "providers/bedrock/ConverseCodec.hpp"

using namespace sluice;

namespace {

// The canonical events of a ConverseStream, as text, so two decodings can be compared.
struct EventLog : providers::StreamEventSink {
  std::string text;
  int errors = 0;
  void onEvent(const providers::StreamEvent& ev) override {
    text += std::to_string(static_cast<int>(ev.kind));
    text += '|';
    text += ev.id;
    text += '|';
    text += ev.name;
    text += '|';
    text += ev.text;
    text += '|';
    text += std::to_string(ev.tool_index) + "|" + std::to_string(static_cast<int>(ev.finish)) + "|" +
            std::to_string(ev.usage.input) + "|" + std::to_string(ev.usage.output) + "\n";
    if (ev.kind == providers::StreamEvent::Kind::Error) {
      if (!ev.error) fuzz::fail("an Error event without its error");
      ++errors;
      text += ev.error->message;
    }
  }
};

EventLog converse(std::string_view stream, std::uint8_t split, bool& ok) {
  EventLog log;
  auto d = providers::bedrock::makeConverseStreamDecoder();
  ok = fuzz::feedSplit(stream, split, [&](std::string_view piece) { return d->feed(piece, log); });
  return log;
}

struct Decoded {
  std::vector<cloud::EventStreamMessage> messages;
  bool ok = true;
  bool idle = true;
};

Decoded decode(std::string_view stream, std::uint8_t split) {
  Decoded d;
  cloud::EventStreamDecoder decoder;
  fuzz::feedSplit(stream, split, [&](std::string_view piece) {
    d.ok = decoder.feed(piece, d.messages);
    return d.ok;
  });
  if (!d.ok) {
    std::vector<cloud::EventStreamMessage> more;
    if (decoder.feed("x", more) || !more.empty()) fuzz::fail("a failed decoder took more bytes");
  }
  d.idle = decoder.idle();
  return d;
}

bool sameMessages(const std::vector<cloud::EventStreamMessage>& a, const std::vector<cloud::EventStreamMessage>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].payload != b[i].payload || a[i].headers.size() != b[i].headers.size()) return false;
    for (size_t j = 0; j < a[i].headers.size(); ++j) {
      const auto &x = a[i].headers[j], &y = b[i].headers[j];
      if (x.name != y.name || x.type != y.type || x.value != y.value) return false;
    }
  }
  return true;
}

bool canonicalChar(char c, std::string_view extra) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || c == '%' ||
         extra.find(c) != std::string_view::npos;
}

void checkEscapes(std::string_view s, std::string_view extra, const char* what) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!canonicalChar(s[i], extra)) fuzz::fail(what, s);
    if (s[i] == '%' && (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
                        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))))
      fuzz::fail("a '%' that is not an escape", s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t split = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  Decoded whole = decode(stream, 0xFF);
  Decoded pieces = decode(stream, split);
  if (whole.ok != pieces.ok) fuzz::fail("the verdict depends on the split");
  if (!sameMessages(whole.messages, pieces.messages)) fuzz::fail("the messages depend on the split");
  if (whole.ok && whole.idle != pieces.idle) fuzz::fail("idleness depends on the split");
  for (const auto& m : whole.messages) {
    std::vector<std::pair<std::string, std::string>> strings;
    bool all_strings = true;
    for (const auto& h : m.headers) {
      if (h.type != cloud::EventHeaderType::String) all_strings = false;
      strings.emplace_back(h.name, h.value);
    }
    if (!all_strings) continue;
    Decoded again = decode(cloud::encodeEventStreamMessage(strings, m.payload), 0xFF);
    if (!again.ok || !sameMessages(again.messages, {m})) fuzz::fail("a message does not encode back to itself");
  }

  bool whole_ok = false, split_ok = false;
  EventLog a = converse(stream, 0xFF, whole_ok), b = converse(stream, split, split_ok);
  if (whole_ok != whole.ok || split_ok != whole.ok) fuzz::fail("the Converse decoder and the framing disagree");
  if (a.text != b.text) fuzz::fail("the Converse events depend on the split", a.text + "\n---\n" + b.text);
  providers::Response res;
  (void)providers::bedrock::decodeConverseResponse(stream, res);

  const std::string uri = cloud::sigV4CanonicalUri(stream);
  if (uri.empty() || uri[0] != '/') fuzz::fail("a canonical URI not starting with '/'", uri);
  checkEscapes(uri, "/", "a canonical URI with a character left unencoded");
  if (uri.find("//") != std::string::npos || uri.find("/./") != std::string::npos ||
      uri.find("/../") != std::string::npos || uri.ends_with("/..") || uri.ends_with("/."))
    fuzz::fail("a canonical URI with an empty or dot segment", uri);
  const std::string query = cloud::sigV4CanonicalQuery(stream);
  checkEscapes(query, "=&", "a canonical query with a character left unencoded");
  return 0;
}
