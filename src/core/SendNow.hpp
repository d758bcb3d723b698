// sendNow: what a non-blocking socket takes at once, in one sendmsg, for the writers that wait
// (under a timeout, through the scheduler) only for what did not fit: the client side's chunks
// (http::Responder) and the upstream request (upstream::Connection). A stream's chunk and a
// request nearly always fit in the socket's send buffer.
#pragma once
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <span>

namespace sluice {

// Sends what `socket` takes at once and returns how many bytes went; `bufs` is left holding what
// did not (a suffix of it, its first buffer advanced past what went), empty when all did. A full
// send buffer is no error: ec is set only for a real one (the peer gone).
inline std::size_t sendNow(boost::asio::ip::tcp::socket& socket, std::span<boost::asio::const_buffer>& bufs,
                           boost::system::error_code& ec) {
  const std::size_t n = socket.write_some(bufs, ec);
  if (ec && (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again)) ec = {};
  if (ec) return n;
  std::size_t skip = n;
  while (!bufs.empty() && skip >= bufs.front().size()) {
    skip -= bufs.front().size();
    bufs = bufs.subspan(1);
  }
  if (!bufs.empty()) bufs.front() += skip;
  return n;
}

}  // namespace sluice
