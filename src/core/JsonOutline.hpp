// JsonOutline: what a few members of a small JSON text hold (kind, size, a string's first bytes,
// a number), read without building a boost::json::value. For the per-event reads on a stream's
// hot path (the commit gate's first events, the usage chunk), where the tree's objects, keys and
// strings cost more than twice the parse itself (bench/instructions.sh).
//
// The text is parsed by Boost.JSON's own validating parser with jsonParseOptions(), so a text
// parseJson refuses is refused here with the same error, and anything accepted is what
// parseJson would accept. Values nested deeper than the outline's depth are parsed and
// checked but not recorded. A key repeated in one object answers with its last value, as the
// tree does. Not thread-safe; one outline per parse at a time (parse() starts over).
#pragma once
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

class JsonOutline {
 public:
  enum class Kind : std::uint8_t { Null, Bool, Int, Uint, Double, String, Array, Object };
  // A string's first kCaptured bytes are kept (enough for a type name or an id); its length is
  // always exact.
  static constexpr std::size_t kCaptured = 64;
  // A node: an index into the outline, or kNone.
  using Node = std::int32_t;
  static constexpr Node kNone = -1;
  static constexpr Node kRoot = 0;

  // Parses text. Records every value at most max_depth levels below the root (the root is
  // level 0). False, with ec set as parseJson sets it, when the text is not one JSON value.
  bool parse(std::string_view text, int max_depth, boost::system::error_code& ec);

  // The member of object node o named key (the last one when the key repeats), or kNone: also
  // when o is kNone or not an object, or the member lies deeper than the outline's depth.
  Node member(Node o, std::string_view key) const;
  // The i-th element of array node a, or kNone.
  Node element(Node a, std::size_t i) const;
  // The recorded members or elements of n in document order: for (c = first(n); has(c); c = next(c)).
  Node first(Node n) const;
  Node next(Node c) const { return c == kNone ? kNone : nodes_[static_cast<std::size_t>(c)].next; }

  bool has(Node n) const { return n != kNone; }
  Kind kind(Node n) const { return nodes_[static_cast<std::size_t>(n)].kind; }
  bool is(Node n, Kind k) const { return n != kNone && kind(n) == k; }
  // Present and not null (what the gate's "present" means).
  bool present(Node n) const { return n != kNone && kind(n) != Kind::Null; }
  // An array's or object's element count, a string's length in bytes (unescaped), else 0.
  std::size_t size(Node n) const { return n == kNone ? 0 : nodes_[static_cast<std::size_t>(n)].size; }
  // A string node's first kCaptured bytes (all of it when it is no longer); else empty.
  std::string_view text(Node n) const;
  // True when n is a string held whole (size() <= kCaptured): text(n) is then all of it.
  bool whole(Node n) const { return is(n, Kind::String) && size(n) <= kCaptured; }
  // An integer node's value (Uint past INT64_MAX gives INT64_MAX), a double's truncated; else 0.
  std::int64_t integer(Node n) const;
  bool boolean(Node n) const { return is(n, Kind::Bool) && nodes_[static_cast<std::size_t>(n)].number != 0; }
  std::size_t nodeCount() const { return nodes_.size(); }

  // For the parser's handler (JsonOutline.cpp); not part of the interface.
  struct Rec {
    Node parent = kNone;
    Node next = kNone;          // the next member or element of the same parent
    std::uint32_t key_at = 0;   // the member's key in keys_ (objects' members)
    std::uint32_t key_len = 0;
    std::uint32_t index = 0;    // the element's position (arrays' elements)
    std::uint32_t text_at = 0;  // a string's captured bytes in text_
    std::uint32_t size = 0;
    std::int64_t number = 0;
    Kind kind = Kind::Null;
  };
  struct Frame {
    Node node;
    Node last;  // its last recorded member or element
    std::uint32_t count;
    bool object;
    std::uint32_t key_at;
    std::uint32_t key_len;
  };
  struct Sink;

  // One outline per thread, for a parse read and dropped before the thread does anything else
  // (no co_await in between): its buffers stay allocated, so a parse allocates nothing.
  static JsonOutline& scratch();

 private:
  std::vector<Rec> nodes_;
  std::vector<Frame> frames_;
  std::string keys_;
  std::string text_;
};

}  // namespace sluice
