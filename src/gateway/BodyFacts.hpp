// What the request path needs from a client's request body, read in one parse (inspectBody),
// the body rewritten for a channel when its model name or usage option must change
// (rewriteBody), and the parse kept for the protect stages (ParsedBody) so that they do not
// parse the body again.
#pragma once
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/Exchange.hpp"

namespace sluice::gateway {

// 16 KB parse arenas, recycled per thread: a request may keep one from inspectBody until its
// protect scan, across a suspension and possibly ending on another thread; in the steady state
// none is allocated (an allocation this large would also make glibc consolidate its fast bins).
class ParseArena {
 public:
  static constexpr std::size_t kBytes = 16 * 1024;
  ParseArena();
  ~ParseArena();
  ParseArena(const ParseArena&) = delete;
  ParseArena& operator=(const ParseArena&) = delete;
  unsigned char* data() const { return buf_.get(); }

 private:
  std::unique_ptr<unsigned char[]> buf_;
};

// A request body parsed once, kept from inspectBody until the protect stages have scanned it (the
// per-thread parse arena inspectBody otherwise uses does not outlive a suspension). A body that
// does not fit the arena overflows to the heap.
struct ParsedBody {
  ParsedBody() : mr(arena.data(), ParseArena::kBytes), doc(boost::json::storage_ptr(&mr)) {}
  ParsedBody(const ParsedBody&) = delete;
  ParsedBody& operator=(const ParsedBody&) = delete;
  ParseArena arena;
  boost::json::monotonic_resource mr;
  boost::json::value doc;  // declared last: destroyed first
};

// The model, stream flag, usage option and output cap of a request body, or the 400 it gets.
// The parse uses a per-thread arena and ends before the caller's next suspension, so requests on
// one worker never share it. keep (optional): the parsed body is moved there (parsed in keep's
// own storage), for pipeline::scanRequest to use rather than parse the body again.
BodyFacts inspectBody(std::string_view text, const ClientCall& call, boost::json::value* keep = nullptr);

// The body to send upstream when the model name or the usage option must change. The common
// case (only adding stream_options) is a splice after the opening brace; anything else is a
// parse, edit and serialize.
std::string rewriteBody(std::string_view text, const BodyFacts& facts, const std::string* new_model, bool inject_usage);

}  // namespace sluice::gateway
