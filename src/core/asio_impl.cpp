// The one translation unit that compiles Asio (BOOST_ASIO_SEPARATE_COMPILATION), and the epoll
// reactor's hooks that core/SocketDrained.hpp describes.
#include "core/SocketDrained.hpp"

#if SLUICE_SOCKET_DRAINED
#include <sys/epoll.h>

namespace sluice::socket_drained::hooks {
int epollCtl(int epfd, int op, int fd, epoll_event* ev);
int epollWait(int epfd, epoll_event* events, int max_events, int timeout);
}  // namespace sluice::socket_drained::hooks

// The reactor's own calls (epoll_reactor.ipp), which are unqualified; nothing else in Asio makes
// them. <sys/epoll.h> is included above, so its declarations keep their names.
#define epoll_ctl(...) ::sluice::socket_drained::hooks::epollCtl(__VA_ARGS__)
#define epoll_wait(...) ::sluice::socket_drained::hooks::epollWait(__VA_ARGS__)
#endif

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>

#if SLUICE_SOCKET_DRAINED
#undef epoll_ctl
#undef epoll_wait

#include <atomic>
#include <cstdint>

namespace sluice::socket_drained {
namespace access {

using Reactor = boost::asio::detail::epoll_reactor;
using State = Reactor::descriptor_state;
using Mutex = boost::asio::detail::conditionally_enabled_mutex;
using OpQueues = boost::asio::detail::op_queue<boost::asio::detail::reactor_op>[Reactor::max_ops];
using Socket = boost::asio::basic_socket<boost::asio::ip::tcp, boost::asio::any_io_executor>;
using SocketImpl =
    boost::asio::detail::io_object_impl<boost::asio::detail::reactive_socket_service<boost::asio::ip::tcp>,
                                        boost::asio::any_io_executor>;

// Names a private member: an explicit instantiation may name it, and the friend it defines hands
// the pointer out.
template <class Tag, typename Tag::type Member>
struct Grant {
  friend typename Tag::type member(Tag) { return Member; }
};
struct StateMutex {
  using type = Mutex State::*;
  friend type member(StateMutex);
};
struct RegisteredEvents {
  using type = std::uint32_t State::*;
  friend type member(RegisteredEvents);
};
struct Queues {
  using type = OpQueues State::*;
  friend type member(Queues);
};
struct TrySpeculative {
  using type = bool (State::*)[Reactor::max_ops];
  friend type member(TrySpeculative);
};
struct Impl {
  using type = SocketImpl Socket::*;
  friend type member(Impl);
};
template struct Grant<StateMutex, &State::mutex_>;
template struct Grant<RegisteredEvents, &State::registered_events_>;
template struct Grant<Queues, &State::op_queue_>;
template struct Grant<TrySpeculative, &State::try_speculative_>;
template struct Grant<Impl, &Socket::impl_>;

}  // namespace access

namespace {

// Bits of the registered-events word that the kernel never sees (stripped before epoll_ctl) and
// Asio only carries along (it tests EPOLLOUT and != 0, and ORs in what it registers).
constexpr std::uint32_t kTracked = 1u << 24;  // EPOLLRDHUP is registered, the events below are noted
constexpr std::uint32_t kPeerEnd = 1u << 25;  // EPOLLRDHUP, EPOLLHUP or EPOLLERR was reported
constexpr std::uint32_t kFresh = 1u << 26;    // a readiness event came while no read was waiting
constexpr std::uint32_t kOurs = kTracked | kPeerEnd | kFresh;
static_assert((kOurs & (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLRDBAND |
                        EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP | EPOLLEXCLUSIVE | EPOLLWAKEUP |
                        EPOLLONESHOT | EPOLLET)) == 0);

// The reactor's two internal descriptors (its interrupter and its timer) carry pointers that are
// not descriptor states; they are told apart by their registration, which has no EPOLLPRI, and
// kept per epoll descriptor. A reactor whose epoll descriptor is beyond the table tracks nothing.
constexpr int kEpollFds = 1024;
struct Internal {
  std::atomic<void*> interrupter{nullptr};
  std::atomic<void*> timer{nullptr};
};
Internal g_internal[kEpollFds];

}  // namespace

namespace hooks {

int epollCtl(int epfd, int op, int fd, epoll_event* ev) {
  if (ev == nullptr || op == EPOLL_CTL_DEL) return ::epoll_ctl(epfd, op, fd, ev);
  epoll_event copy = *ev;
  copy.events &= ~kOurs;
  if ((copy.events & EPOLLPRI) != 0) {
    // A descriptor's registration (register_descriptor, register_internal_descriptor, or a MOD
    // adding EPOLLOUT): the peer's end is reported with the readiness event that comes with it.
    copy.events |= EPOLLRDHUP;
    if (op == EPOLL_CTL_ADD && epfd >= 0 && epfd < kEpollFds)
      static_cast<access::State*>(ev->data.ptr)->*member(access::RegisteredEvents{}) |= kTracked;
  } else if (op == EPOLL_CTL_ADD && epfd >= 0 && epfd < kEpollFds) {
    // The reactor's constructor (or its notify_fork) adds the interrupter (edge-triggered), then
    // the timer (level-triggered) when there is one.
    auto& in = g_internal[epfd];
    if ((copy.events & EPOLLET) != 0) {
      in.interrupter.store(ev->data.ptr, std::memory_order_relaxed);
      in.timer.store(nullptr, std::memory_order_relaxed);
    } else {
      in.timer.store(ev->data.ptr, std::memory_order_relaxed);
    }
  }
  return ::epoll_ctl(epfd, op, fd, &copy);
}

int epollWait(int epfd, epoll_event* events, int max_events, int timeout) {
  const int n = ::epoll_wait(epfd, events, max_events, timeout);
  if (n <= 0 || epfd < 0 || epfd >= kEpollFds) return n;
  const void* const interrupter = g_internal[epfd].interrupter.load(std::memory_order_relaxed);
  const void* const timer = g_internal[epfd].timer.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    void* const p = events[i].data.ptr;
    const std::uint32_t e = events[i].events;
    if (p == interrupter || p == timer || (e & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) == 0) continue;
    auto* state = static_cast<access::State*>(p);
    const access::Mutex::scoped_lock lock(state->*member(access::StateMutex{}));
    std::uint32_t& registered = state->*member(access::RegisteredEvents{});
    if ((registered & kTracked) == 0) continue;
    if ((e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) registered |= kPeerEnd;
    // A read waiting now takes what this event announces (the reactor performs it next); with none
    // waiting, the data stays for the next read, which must therefore be tried at once.
    if ((state->*member(access::Queues{}))[access::Reactor::read_op].empty()) registered |= kFresh;
  }
  return n;
}

}  // namespace hooks

namespace {
access::State* stateOf(boost::asio::ip::tcp::socket& socket) {
  access::Socket& base = socket;
  return (base.*member(access::Impl{})).get_implementation().reactor_data_;
}
}  // namespace

void afterRead(boost::asio::ip::tcp::socket& socket, std::size_t asked, std::size_t got) {
  access::State* state = stateOf(socket);
  if (state == nullptr) return;
  const access::Mutex::scoped_lock lock(state->*member(access::StateMutex{}));
  std::uint32_t& registered = state->*member(access::RegisteredEvents{});
  const bool fresh = (registered & kFresh) != 0;
  registered &= ~kFresh;
  if ((registered & (kTracked | kPeerEnd)) == kTracked && !fresh && got != 0 && got < asked)
    (state->*member(access::TrySpeculative{}))[access::Reactor::read_op] = false;
}

ReadState readState(boost::asio::ip::tcp::socket& socket) {
  access::State* state = stateOf(socket);
  if (state == nullptr) return {};
  const access::Mutex::scoped_lock lock(state->*member(access::StateMutex{}));
  return {(state->*member(access::TrySpeculative{}))[access::Reactor::read_op],
          (state->*member(access::RegisteredEvents{}) & kPeerEnd) != 0};
}

}  // namespace sluice::socket_drained

#else

namespace sluice::socket_drained {
void afterRead(boost::asio::ip::tcp::socket&, std::size_t, std::size_t) {}
ReadState readState(boost::asio::ip::tcp::socket&) { return {}; }
}  // namespace sluice::socket_drained

#endif
