// ObjectRoutes: which channel made a file or a batch, so that every later call about it (retrieve,
// content, delete, cancel, a batch naming its input file) goes to the provider that holds it.
// Learned from the answers of the files and batches endpoints. Bounded: past `capacity` ids the
// oldest are forgotten (a call about one then routes like a call without an id). In memory, per
// instance. Thread-safe (the workers share one).
#pragma once
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::gateway {

class ObjectRoutes {
 public:
  explicit ObjectRoutes(std::size_t capacity = 200'000) : capacity_(capacity) {}

  void remember(std::string_view id, std::string_view channel);
  std::optional<std::string> channelOf(std::string_view id) const;
  void forget(std::string_view id);
  // The ids an answer of the files or batches endpoints names (its own id, a batch's
  // input/output/error file ids, and those of a list's items), remembered with `channel`.
  void learnFrom(std::string_view json_body, std::string_view channel);
  std::size_t size() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> by_id_;
  std::deque<std::string> order_;  // insertion order, for the bound
};

}  // namespace sluice::gateway
