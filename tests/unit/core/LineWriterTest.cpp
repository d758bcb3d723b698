#include "core/LineWriter.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include <string>
#include <thread>
#include <vector>

namespace sluice {
namespace {
namespace line_writer_test {

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

TEST(LineWriter, EveryLineFromEveryThreadArrivesWhole) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string got;
  std::thread reader([&] { got = readAll(fds[0]); });
  {
    LineWriter w(fds[1]);
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&w, t] {
        for (int i = 0; i < 5000; ++i) w.append("thread " + std::to_string(t) + " line " + std::to_string(i));
        w.flushThisThread();  // a worker does this when its loop ends
      });
    }
    for (auto& th : writers) th.join();
    w.drain();
    EXPECT_EQ(w.dropped(), 0u);
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  std::size_t lines = 0;
  for (char c : got) lines += c == '\n';
  EXPECT_EQ(lines, 20000u);
  EXPECT_NE(got.find("thread 3 line 4999\n"), std::string::npos);
}

TEST(LineWriter, CountsWhatItDropsPastItsBound) {
  ::signal(SIGPIPE, SIG_IGN);  // as main() does
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    // Nobody reads the pipe: the writer thread blocks, the queue fills, batches are dropped.
    LineWriter w(fds[1], /*max_queued_bytes=*/LineWriter::kBatchBytes * 2);
    std::string line(1000, 'x');
    for (int i = 0; i < 2000; ++i) w.append(line);
    EXPECT_GT(w.dropped(), 0u);
    ::close(fds[0]);  // unblock the writer (EPIPE) so the destructor can finish
  }
  ::close(fds[1]);
}

}  // namespace line_writer_test
}  // namespace
}  // namespace sluice
