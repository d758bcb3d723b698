// threadScratch<Tag, N>(): N bytes of scratch for the calling thread, allocated on its first use.
// A thread_local array would do the same job, but the C library zeroes every thread's static TLS
// block when the thread starts, so each array would be resident in every thread the process has
// (a dozen: the resolver's, the log writer's, the probes'), not only in the workers that use it.
// Tag tells apart buffers that may be in use at the same time. The buffer is not zeroed.
#pragma once
#include <cstddef>
#include <memory>

namespace sluice {

template <class Tag, std::size_t N>
unsigned char* threadScratch() {
  thread_local std::unique_ptr<unsigned char[]> buf;
  if (!buf) buf.reset(new unsigned char[N]);
  return buf.get();
}

}  // namespace sluice
