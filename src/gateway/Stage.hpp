// Stage: one step of the request path, in the way Envoy's HTTP filters and Pingora's phases
// work. A StageConfig is built once with the snapshot (gateway/Chain.cpp, where the order is
// written down); for each request it starts a Stage, which holds only that stage's own state
// for that request. The runner (runChain) calls each started stage's onRequest in order until one
// answers, then every started stage's onComplete in reverse order, however the request ended.
//
// What stages share is the Exchange (gateway/Exchange.hpp): the request, the caller, the route,
// the limits held and the plan for the answer's way back. A stage reads what the stages before it
// wrote there and writes only its own part.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <array>
#include <cstddef>
#include <memory_resource>
#include <new>
#include <string_view>
#include <utility>

namespace sluice::gateway {

struct Exchange;

// What a stage's request hook decided.
enum class Step {
  Continue,  // the next stage takes the request
  Answered,  // the client got its answer (in its own format) from this stage: the chain stops
};

class Stage {
 public:
  virtual ~Stage() = default;
  // The request on its way out. Never throws on bad input: a refusal is an answer.
  virtual boost::asio::awaitable<Step> onRequest(Exchange& ex) = 0;
  // The request is over (answered by any stage, or thrown past): give back what this stage
  // holds. Runs for every stage whose onRequest ran.
  virtual boost::asio::awaitable<void> onComplete(Exchange&) { co_return; }
};

// A request's stages live in one small arena with the request (no allocation per stage unless a
// stage's state outgrows it).
class StageArena {
 public:
  static constexpr std::size_t kMaxStages = 16;
  StageArena() = default;
  StageArena(const StageArena&) = delete;
  StageArena& operator=(const StageArena&) = delete;
  ~StageArena() {
    for (std::size_t i = count_; i-- > 0;) made_[i]->~Stage();
  }

  template <class T, class... Args>
  T* make(Args&&... args) {
    void* p = mr_.allocate(sizeof(T), alignof(T));
    T* t = new (p) T(std::forward<Args>(args)...);
    made_[count_++] = t;  // chains have at most kMaxStages stages (Chain.cpp checks at build)
    return t;
  }

 private:
  alignas(std::max_align_t) std::byte inline_[512];
  std::pmr::monotonic_buffer_resource mr_{inline_, sizeof inline_};
  std::array<Stage*, kMaxStages> made_{};
  std::size_t count_ = 0;
};

class StageConfig {
 public:
  virtual ~StageConfig() = default;
  // The stage's name, for docs/architecture.md, logs and tests.
  virtual std::string_view name() const = 0;
  // The stage for this request, made in `arena`, or nullptr when the stage has nothing to do for
  // it. Called right before the stage's turn: it sees what the stages before it decided.
  virtual Stage* start(const Exchange& ex, StageArena& arena) const = 0;
};

}  // namespace sluice::gateway
