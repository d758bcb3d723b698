// SocketDrained: after a short read the next read waits for the kernel's event, except when the
// peer's end came with the bytes or data came before the read's handler ran. Real loopback
// sockets and Asio's real reactor; every case that would hang fails on a bounded wait instead.
#include "core/SocketDrained.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace sluice::socket_drained {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

struct Pair {
  net::io_context ctx{1};
  tcp::socket ours{ctx};
  tcp::socket peer{ctx};  // written to synchronously, never read by the reactor

  Pair() {
    tcp::acceptor acceptor(ctx, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    ours.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
  }

  void send(const std::string& bytes) { net::write(peer, net::buffer(bytes)); }
};

struct Read {
  boost::system::error_code ec;
  std::string bytes;
};

// Starts a read of up to `room` bytes; its handler reports to afterRead as the upstream client
// does. The result is there once the context has run the handler.
void startRead(Pair& p, std::optional<Read>& out, std::size_t room) {
  auto buffer = std::make_shared<std::string>(room, '\0');
  p.ours.async_read_some(net::buffer(*buffer), [&p, &out, buffer, room](boost::system::error_code ec, std::size_t n) {
    if (!ec) afterRead(p.ours, room, n);
    out = Read{ec, buffer->substr(0, n)};
  });
}

// Runs the context until the read completed; false if it did not within a generous bound (it
// would have waited for an event that never comes).
bool finish(Pair& p, const std::optional<Read>& out) {
  p.ctx.restart();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!out && std::chrono::steady_clock::now() < until) p.ctx.run_one_for(std::chrono::milliseconds(100));
  return out.has_value();
}

// The read is waiting when the bytes come, as in a relayed stream between two chunks; `then` runs
// right after they are sent, before the reactor looks (the peer's end, a reset).
Read waitingRead(Pair& p, const std::string& bytes, std::size_t room = 64, const std::function<void()>& then = {}) {
  std::optional<Read> r;
  startRead(p, r, room);
  p.ctx.restart();
  p.ctx.poll();
  p.send(bytes);
  if (then) then();
  EXPECT_TRUE(finish(p, r)) << "the read never completed";
  return r.value_or(Read{net::error::timed_out, {}});
}

// The next read on the socket, tried with nothing sent: it must complete (with what is pending, or
// the peer's end) rather than wait for an event that will not come.
std::optional<Read> nextRead(Pair& p) {
  std::optional<Read> r;
  startRead(p, r, 64);
  finish(p, r);
  return r;
}

TEST(SocketDrained, AShortReadMakesTheNextWaitForTheEventAndItStillGetsTheData) {
  Pair p;
  const Read first = waitingRead(p, "hello");
  EXPECT_FALSE(first.ec);
  EXPECT_EQ(first.bytes, "hello");
  if (SLUICE_SOCKET_DRAINED) {
    EXPECT_FALSE(readState(p.ours).try_at_once) << "the socket is known empty";
  }
  EXPECT_FALSE(readState(p.ours).peer_end_reported);
  // The next chunk raises an event; the waiting read takes it.
  const Read second = waitingRead(p, "world");
  EXPECT_FALSE(second.ec);
  EXPECT_EQ(second.bytes, "world");
  // A read that filled its buffer says nothing about what is left: the next is tried at once.
  const Read full = waitingRead(p, std::string(64, 'x') + "tail", 64);
  EXPECT_EQ(full.bytes.size(), 64u);
  EXPECT_TRUE(readState(p.ours).try_at_once);
  const auto rest = nextRead(p);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->bytes, "tail");
}

TEST(SocketDrained, ThePeersEndThatCameWithTheLastBytesIsFoundAtOnce) {
  Pair p;
  // The last bytes and the end together, before the reactor looks: one event for both.
  const Read r = waitingRead(p, "bye", 64, [&] { p.peer.shutdown(tcp::socket::shutdown_send); });
  EXPECT_FALSE(r.ec);
  EXPECT_EQ(r.bytes, "bye");
  EXPECT_EQ(readState(p.ours).peer_end_reported, SLUICE_SOCKET_DRAINED == 1);
  EXPECT_TRUE(readState(p.ours).try_at_once);
  const auto end = nextRead(p);
  ASSERT_TRUE(end.has_value()) << "the end was pending with no event to come: the read must not wait";
  EXPECT_EQ(end->ec, net::error::eof);
}

TEST(SocketDrained, AResetThatCameWithTheLastBytesIsFoundAtOnce) {
  Pair p;
  const Read r = waitingRead(p, "partial", 64, [&] {
    p.peer.set_option(net::socket_base::linger(true, 0));
    p.peer.close();  // a reset
  });
  if (r.ec) return;  // the kernel reported the reset at once: nothing is left to wait for
  EXPECT_EQ(r.bytes, "partial");
  const auto after = nextRead(p);
  ASSERT_TRUE(after.has_value()) << "the reset was pending with no event to come: the read must not wait";
  EXPECT_TRUE(after->ec);
}

TEST(SocketDrained, DataWhoseEventCameBeforeTheHandlerIsNotLost) {
  Pair p;
  // A full read leaves the next one to be tried at once.
  const Read full = waitingRead(p, std::string(64, 'x'), 64);
  ASSERT_EQ(full.bytes.size(), 64u);
  // Bytes come; the read is tried at once and takes them; more bytes come, and the reactor (ahead
  // of the handler in the queue) handles their event before the handler runs.
  p.send("b");
  std::optional<Read> r;
  startRead(p, r, 64);
  ASSERT_FALSE(r.has_value());
  p.send("c");
  ASSERT_TRUE(finish(p, r));
  const std::string got = r->bytes;
  ASSERT_FALSE(got.empty());
  if (got == "bc") return;  // both were there for the one read
  EXPECT_EQ(got, "b");
  EXPECT_TRUE(readState(p.ours).try_at_once) << "an event came after the read: the next is tried at once";
  const auto next = nextRead(p);
  ASSERT_TRUE(next.has_value()) << "the event for \"c\" was handled already: the read must not wait";
  EXPECT_EQ(next->bytes, "c");
}

// An idle connection (no read waiting, as in the upstream pool) whose peer closes it: the reactor's
// event says so, with no system call by the pool.
TEST(SocketDrained, AnIdleConnectionThePeerClosedIsKnownWithoutAReadOrASystemCall) {
  Pair p;
  const Read first = waitingRead(p, "response");
  ASSERT_EQ(first.bytes, "response");
  p.ctx.restart();
  p.ctx.poll();
  EXPECT_FALSE(readState(p.ours).peer_end_reported) << "open and idle";
  p.peer.close();
  // The reactor handles the event on its next turn (the guard keeps it turning with no handler
  // waiting); a bounded number of turns stands in for time.
  const auto guard = net::make_work_guard(p.ctx);
  for (int i = 0; i < 100 && !readState(p.ours).peer_end_reported; ++i) {
    p.ctx.restart();
    p.ctx.run_one_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(readState(p.ours).peer_end_reported, SLUICE_SOCKET_DRAINED == 1);
}

}  // namespace
}  // namespace sluice::socket_drained
