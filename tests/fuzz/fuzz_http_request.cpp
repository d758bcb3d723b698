// The server's HTTP/1.1 request parsing path (http/Server.cpp serveConnection): Beast's
// request_parser<string_body> with a 64 KiB header limit and a 1 MiB body limit, read with
// read_header then read from a flat_buffer, requests pipelined on one connection, the bytes
// arriving in fuzzer-chosen read sizes. Input: [read size] [bytes from the client].
// Checks: no crash; no accepted request breaks the limits.
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>

#include "FuzzUtil.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {
constexpr std::size_t kMaxHeader = 64u * 1024;
constexpr std::uint64_t kMaxBody = 1u << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static net::io_context ioc;
  static constexpr std::size_t kReadSizes[] = {1, 3, 16, 64, 512, 4096, 16384, 65536};
  beast::test::stream client(ioc, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  client.read_size(kReadSizes[data[0] & 7]);
  client.close_remote();  // the client sends its bytes, then half-closes

  beast::flat_buffer buffer;
  for (int n = 0; n < 64; ++n) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(kMaxHeader));
    parser.body_limit(kMaxBody);
    beast::error_code ec;
    bhttp::read_header(client, buffer, parser, ec);
    if (ec) break;
    if (auto cl = parser.content_length(); cl && *cl > kMaxBody) break;  // 413, as the server does
    if (!parser.is_done()) {
      bhttp::read(client, buffer, parser, ec);
      if (ec) break;
    }
    auto req = parser.release();
    if (req.body().size() > kMaxBody) sluice::fuzz::fail("request body past the limit was accepted");
    std::size_t header_bytes = req.target().size() + req.method_string().size();
    for (const auto& f : req) header_bytes += f.name_string().size() + f.value().size();
    if (header_bytes > kMaxHeader) sluice::fuzz::fail("request header past the limit was accepted");
    (void)beast::iequals(req[bhttp::field::expect], "100-continue");
    if (!req.keep_alive()) break;
  }
  return 0;
}
