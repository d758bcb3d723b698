// The server's HTTP/1.1 request parsing path (http/Server.cpp serveConnection): the raw head
// checked by http::HeadScanner as it arrives (http/HeadReader.hpp), then Beast's
// request_parser<string_body> with a 64 KiB header limit and a 1 MiB body limit, read with
// read_header then read from a flat_buffer capped as the server caps it, chunk extensions checked
// and trailers refused; requests pipelined on one connection, the bytes arriving in
// fuzzer-chosen read sizes. Input: [read size] [bytes from the client].
// Checks: no crash; no accepted request breaks the limits; the scanner's verdict does not depend
// on how the bytes arrive; when the scanner and Beast both accept a head they frame it the same
// way (head length, chunked or not, Content-Length, body bytes consumed), so the next request
// starts where both think this one ended.
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <iterator>
#include <string>

#include "FuzzUtil.hpp"
#include "http/Framing.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using sluice::http::BodyFraming;
using sluice::http::HeadVerdict;

namespace {
constexpr std::size_t kMaxHeader = 64u * 1024;
constexpr std::uint64_t kMaxBody = 1u << 20;

std::string_view bufferView(const beast::flat_buffer& b) {
  return {static_cast<const char*>(b.data().data()), b.size()};
}

// HeadReader's loop, synchronously: read until the scanner decides or the limit is reached.
// Returns false when the stream ended or failed before a verdict.
bool readHead(beast::test::stream& client, beast::flat_buffer& buffer, HeadVerdict& verdict) {
  sluice::http::HeadScanner scanner;
  for (;;) {
    verdict = scanner.feed(bufferView(buffer));
    if (verdict.state != HeadVerdict::State::Incomplete || buffer.size() >= kMaxHeader ||
        buffer.size() >= buffer.max_size())
      return true;
    const std::size_t room = std::min(std::max<std::size_t>(512, buffer.capacity() - buffer.size()),
                                      buffer.max_size() - buffer.size());
    beast::error_code ec;
    const std::size_t n = client.read_some(buffer.prepare(room), ec);
    if (ec) return false;
    buffer.commit(n);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static net::io_context ioc;
  static constexpr std::size_t kReadSizes[] = {1, 3, 16, 64, 512, 4096, 16384, 65536};
  beast::test::stream client(ioc, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  client.read_size(kReadSizes[data[0] & 7]);
  client.close_remote();  // the client sends its bytes, then half-closes

  beast::flat_buffer buffer;
  buffer.max_size(kMaxHeader + 64u * 1024);
  for (int n = 0; n < 64; ++n) {
    HeadVerdict verdict;
    if (!readHead(client, buffer, verdict)) break;
    // However the bytes arrived, the whole-buffer verdict is the same.
    const HeadVerdict once = sluice::http::checkRequestHead(bufferView(buffer));
    if (once.state != verdict.state || once.head_bytes != verdict.head_bytes ||
        (verdict.refused() && once.error.status != verdict.error.status))
      sluice::fuzz::fail("scanner verdict depends on how the head arrived", bufferView(buffer));
    if (verdict.refused()) {
      if (verdict.error.status != 400 && verdict.error.status != 501) sluice::fuzz::fail("refusal with odd status");
      break;  // 400 and close: nothing after it is parsed
    }

    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(kMaxHeader));
    parser.body_limit(kMaxBody);
    beast::error_code ec;
    const std::string head_bytes(bufferView(buffer).substr(0, verdict.head_bytes));
    const std::size_t used = bhttp::read_header(client, buffer, parser, ec);
    if (ec) break;  // Beast stricter than the scanner: a refusal, never a desync
    if (!verdict.complete()) sluice::fuzz::fail("Beast parsed a head the scanner had not finished", head_bytes);
    if (used != verdict.head_bytes) sluice::fuzz::fail("Beast and the scanner disagree on the head length", head_bytes);
    if (parser.chunked() != (verdict.body == BodyFraming::Chunked))
      sluice::fuzz::fail("Beast and the scanner disagree on chunked", head_bytes);
    if (verdict.body == BodyFraming::Length &&
        (!parser.content_length() || *parser.content_length() != verdict.content_length))
      sluice::fuzz::fail("Beast and the scanner disagree on Content-Length", head_bytes);
    if (verdict.body == BodyFraming::None && parser.content_length() && *parser.content_length() != 0)
      sluice::fuzz::fail("Beast sees a body the scanner does not", head_bytes);
    if (!parser.is_done()) {
      auto checkChunk = [](std::uint64_t, std::string_view ext, beast::error_code& cec) {
        if (sluice::http::checkChunkExtension(ext)) cec = bhttp::error::bad_chunk_extension;
      };
      parser.on_chunk_header(checkChunk);
      const auto fields = std::distance(parser.get().begin(), parser.get().end());
      const std::size_t body_used = bhttp::read(client, buffer, parser, ec);
      if (ec) break;
      if (std::distance(parser.get().begin(), parser.get().end()) != fields) break;  // trailers: 400
      if (verdict.body == BodyFraming::Length && body_used != verdict.content_length)
        sluice::fuzz::fail("body bytes consumed differ from Content-Length", head_bytes);
    }
    auto req = parser.release();
    if (req.body().size() > kMaxBody) sluice::fuzz::fail("request body past the limit was accepted");
    if (verdict.body == BodyFraming::Length && req.body().size() != verdict.content_length)
      sluice::fuzz::fail("body size differs from Content-Length", head_bytes);
    if (verdict.body == BodyFraming::None && !req.body().empty())
      sluice::fuzz::fail("a request without framing headers got a body", head_bytes);
    std::size_t header_bytes = req.target().size() + req.method_string().size();
    for (const auto& f : req) header_bytes += f.name_string().size() + f.value().size();
    if (header_bytes > kMaxHeader) sluice::fuzz::fail("request header past the limit was accepted");
    (void)beast::iequals(req[bhttp::field::expect], "100-continue");
    if (!req.keep_alive()) break;
  }
  return 0;
}
