// SocketDrained: tells Asio's reactor that a socket's receive queue is empty, so the next read on it
// waits for the kernel's readiness event instead of first trying a recv that can only fail.
//
// Why: Asio 1.26 (Boost 1.81, Debian 12) tries every read on a socket at once ("speculatively")
// unless the previous read found the peer's end, also right after a short read showed the queue
// empty. A relayed stream reads one upstream chunk at a time, so every chunk cost two recv calls, the
// first one answered EAGAIN: 40 recv calls per 20-chunk request where nginx makes 22 (counted with
// `perf stat -e syscalls:sys_enter_recvfrom`, bench/BENCHMARKS.md). A short read (fewer bytes than
// asked for) from a stream socket means the queue was empty when it returned; data that comes after
// it raises a new edge-triggered event, and the reactor turns speculation back on when that event
// comes, whether or not a read is waiting by then, so nothing can be missed.
//
// How: the reactor keeps that decision in a private flag of its per-descriptor state. It is reached
// through the rule that explicit template instantiations are exempt from access checking (the only
// standard way to name a private member from outside). Only the epoll reactor's layout is
// assumed, and a static_assert keeps this to the Boost version it was written against.
//
// Thread-safety: call it from the thread that runs the socket's io_context (the reactor's flag
// is read and written there: each worker has a single-threaded io_context).
#pragma once
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION / 100 != 1081 || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) || !defined(BOOST_ASIO_HAS_EPOLL)
#define SLUICE_SOCKET_DRAINED 0
#else
#define SLUICE_SOCKET_DRAINED 1
#endif

namespace sluice::socket_drained {

#if SLUICE_SOCKET_DRAINED
using Reactor = boost::asio::detail::epoll_reactor;
using Socket = boost::asio::basic_socket<boost::asio::ip::tcp, boost::asio::any_io_executor>;
using SocketImpl =
    boost::asio::detail::io_object_impl<boost::asio::detail::reactive_socket_service<boost::asio::ip::tcp>,
                                        boost::asio::any_io_executor>;

template <class Tag, typename Tag::type Member>
struct Grant {
  friend typename Tag::type member(Tag) { return Member; }
};
struct TrySpeculative {
  using type = bool (Reactor::descriptor_state::*)[Reactor::max_ops];
  friend type member(TrySpeculative);
};
struct Impl {
  using type = SocketImpl Socket::*;
  friend type member(Impl);
};
template struct Grant<TrySpeculative, &Reactor::descriptor_state::try_speculative_>;
template struct Grant<Impl, &Socket::impl_>;
#endif

// After a read that returned fewer bytes than it asked for (and no error): the next read waits.
inline void markDrained([[maybe_unused]] Socket& s) {
#if SLUICE_SOCKET_DRAINED
  auto* state = (s.*member(Impl{})).get_implementation().reactor_data_;
  if (state != nullptr) (state->*member(TrySpeculative{}))[Reactor::read_op] = false;
#endif
}

}  // namespace sluice::socket_drained
