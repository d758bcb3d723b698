// SocketDrained: after a short read from a socket, the next read waits for the kernel's readiness
// event instead of first trying a recv that can only answer EAGAIN, unless the peer's end may be
// pending or data may have come meanwhile.
//
// Why: Asio 1.26 (Boost 1.81, Debian 12) tries every read at once ("speculatively") unless the
// previous one found the peer's end. A relayed stream reads one upstream chunk at a time, so each
// chunk cost two recv calls, the first answered EAGAIN: about 40 recv calls per 20-chunk request
// where nginx makes 22 (`BENCH_ONLY=syscalls bash bench/run.sh`, bench/BENCHMARKS.md).
//
// Why not simply skip that recv after a short read: two things can be pending that no new
// edge-triggered event will announce.
//  - The peer's end (FIN or reset) that came with the last bytes: the kernel raises one event for
//    both, the read takes the bytes, and the end is only found by reading again. nginx learns of it
//    from EPOLLRDHUP in the same event; Asio registers no EPOLLRDHUP.
//  - Data whose event the reactor handled between the short read and its completion handler (a
//    speculative read completes through the handler queue, and the reactor can run first): the
//    reactor turned speculation back on, and turning it off after that would lose the data.
// So the one translation unit that compiles Asio (core/asio_impl.cpp) routes the epoll reactor's
// epoll_ctl and epoll_wait through two small functions: the first adds EPOLLRDHUP to every socket's
// registration; the second notes, in spare bits of the descriptor's registered-events word, that
// the peer's end was reported (EPOLLRDHUP, EPOLLHUP, EPOLLERR) or that a readiness event came while
// no read was waiting. afterRead() turns speculation off only when neither was noted since the
// previous read completed; it forgets the second either way. Speculation then comes back as in
// plain Asio, with the next event.
//
// The reactor keeps its flags in private members of its per-descriptor state; they are reached
// through the rule that explicit template instantiations are exempt from access checking (the only
// standard way to name a private member from outside). The layout of Boost 1.81's epoll reactor is
// assumed, so anything else compiles this to nothing (SLUICE_SOCKET_DRAINED 0).
//
// Thread-safety: afterRead() runs on the thread that runs the socket's io_context; it takes the
// descriptor's mutex as the reactor does.
#pragma once
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#include <cstddef>

#if BOOST_VERSION / 100 == 1081 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define SLUICE_SOCKET_DRAINED 1
#else
#define SLUICE_SOCKET_DRAINED 0
#endif

namespace sluice::socket_drained {

// A read on `socket` asked for `asked` bytes and got `got` without an error: when that was fewer
// (the socket's queue was empty when it returned), the next read waits for the kernel's event
// unless the peer's end or new data may be pending (see above).
void afterRead(boost::asio::ip::tcp::socket& socket, std::size_t asked, std::size_t got);

// What the reactor knows of the socket: whether its next read is tried at once, and whether the
// peer's end (FIN, reset) was reported, e.g. by a provider that closed an idle pooled connection.
// Where SLUICE_SOCKET_DRAINED is 0: tried at once, no end known.
struct ReadState {
  bool try_at_once = true;
  bool peer_end_reported = false;
};
ReadState readState(boost::asio::ip::tcp::socket& socket);

}  // namespace sluice::socket_drained
