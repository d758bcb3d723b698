// readRequestHead: Beast's async_read_header, with the raw head checked by HeadScanner
// (http/Framing.hpp) while it arrives, so Beast only ever parses a head whose framing is
// unambiguous. A template over the stream (plain TCP or TLS); Server.cpp is its only user, as it
// pulls in Asio and Beast.
#pragma once
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/Error.hpp"
#include "core/SocketDrained.hpp"
#include "http/Framing.hpp"

namespace sluice::http {

// Reads until `buffer` holds the whole head (or `header_limit` bytes of it), then lets Beast parse
// it from there without another read. Returns Beast's error (eof and timeouts reported as
// async_read_header reports them), or the refusal when the head's framing is ambiguous; the
// caller answers a refusal with its status and closes the connection.
template <class Stream>
boost::asio::awaitable<std::pair<boost::beast::error_code, std::optional<Error>>> readRequestHead(
    Stream& stream, boost::beast::flat_buffer& buffer,
    boost::beast::http::request_parser<boost::beast::http::string_body>& parser, std::size_t header_limit) {
  namespace bhttp = boost::beast::http;
  constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);
  HeadScanner scanner;
  for (;;) {
    const HeadVerdict& v = scanner.feed({static_cast<const char*>(buffer.data().data()), buffer.size()});
    if (v.refused()) co_return std::pair{boost::beast::error_code{}, std::optional<Error>(v.error)};
    if (v.complete() || buffer.size() >= header_limit || buffer.size() >= buffer.max_size()) break;
    const std::size_t room = std::min(std::max<std::size_t>(512, buffer.capacity() - buffer.size()),
                                      buffer.max_size() - buffer.size());
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(room), kTuple);
    if (ec) {
      if (ec == boost::asio::error::eof)
        ec = buffer.size() == 0 ? bhttp::error::end_of_stream : bhttp::error::partial_message;
      co_return std::pair{ec, std::optional<Error>()};
    }
    buffer.commit(n);
    // A request read whole leaves the socket empty: the next request on the connection (after
    // this one is answered) waits for its event instead of a recv that finds nothing
    // (core/SocketDrained.hpp), as an upstream stream's reads do.
    if constexpr (std::is_same_v<Stream, boost::beast::tcp_stream>) socket_drained::afterRead(stream.socket(), room, n);
  }
  // The head is buffered whole (HeadScanner saw its end): the parser reads it here, without the
  // composed read and the trip through the scheduler async_read_header would make for it. A head
  // cut off by the buffer's limit still goes to async_read_header, which reports it.
  if (buffer.size() != 0) {
    boost::beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec != bhttp::error::need_more) co_return std::pair{ec, std::optional<Error>()};
  }
  auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, kTuple);
  co_return std::pair{ec, std::optional<Error>()};
}

}  // namespace sluice::http
