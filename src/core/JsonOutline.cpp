#include "core/JsonOutline.hpp"

#include <algorithm>
#include <cstring>
#include <boost/json/array.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <limits>

#include "core/JsonText.hpp"

namespace sluice {

namespace {
using boost::json::string_view;
using boost::system::error_code;
}  // namespace

// The parser's events, turned into the outline's records. Containers open in frames_ (one per
// open array or object at any depth); a value is recorded when every container around it is and
// it lies no deeper than max_depth.
struct JsonOutline::Sink {
  // The tree parseJson builds has these bounds; the outline refuses past the same ones.
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();

  JsonOutline* out = nullptr;
  std::size_t max_depth = 0;
  std::vector<Frame>& frames;
  explicit Sink(std::vector<Frame>& f) : frames(f) {}
  bool part_open = false;  // a string's or key's first part has been seen
  bool part_kept = false;  // and it belongs to a recorded value
  std::uint32_t part_at = 0;

  // Whether the value beginning now is recorded.
  bool recorded() const {
    if (frames.empty()) return true;
    return frames.back().node != kNone && frames.size() <= max_depth;
  }
  Node add(Kind k, std::uint32_t size = 0, std::int64_t number = 0, std::uint32_t text_at = 0) {
    const bool keep = recorded();
    Rec r;
    if (!frames.empty()) {
      Frame& f = frames.back();
      r.parent = f.node;
      if (f.object) {
        r.key_at = f.key_at;
        r.key_len = f.key_len;
      } else {
        r.index = f.count;
      }
      ++f.count;
    }
    if (!keep) return kNone;
    r.kind = k;
    r.size = size;
    r.number = number;
    r.text_at = text_at;
    out->nodes_.push_back(r);
    const auto n = static_cast<Node>(out->nodes_.size() - 1);
    if (!frames.empty()) {
      Frame& f = frames.back();
      if (f.last != kNone) out->nodes_[static_cast<std::size_t>(f.last)].next = n;
      f.last = n;
    }
    return n;
  }
  void capture(std::string& into, string_view s, bool whole) {
    if (!part_open) {
      part_open = true;
      part_kept = recorded();
      part_at = static_cast<std::uint32_t>(into.size());
    }
    if (!part_kept) return;
    if (whole) {
      into.append(s.data(), s.size());
      return;
    }
    const std::size_t have = into.size() - part_at;
    if (have < kCaptured) into.append(s.data(), std::min(s.size(), kCaptured - have));
  }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool open(bool object) {
    const Node n = add(object ? Kind::Object : Kind::Array);
    frames.push_back(Frame{n, kNone, 0, object, 0, 0});
    return true;
  }
  bool close(std::size_t n) {
    const Node node = frames.back().node;
    if (node != kNone) out->nodes_[static_cast<std::size_t>(node)].size = static_cast<std::uint32_t>(n);
    frames.pop_back();
    return true;
  }
  bool on_array_begin(error_code&) { return open(false); }
  bool on_array_end(std::size_t n, error_code&) { return close(n); }
  bool on_object_begin(error_code&) { return open(true); }
  bool on_object_end(std::size_t n, error_code&) { return close(n); }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    capture(out->text_, s, false);
    return true;
  }
  bool on_string(string_view s, std::size_t n, error_code&) {
    capture(out->text_, s, false);
    part_open = false;
    add(Kind::String, static_cast<std::uint32_t>(n), 0, part_at);
    return true;
  }
  // A key belongs to the member that follows it: kept when that member will be recorded (the
  // object is recorded and its members are within the depth).
  bool on_key_part(string_view s, std::size_t, error_code&) {
    keyPart(s);
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    keyPart(s);
    part_open = false;
    Frame& f = frames.back();
    f.key_at = part_at;
    f.key_len = part_kept ? static_cast<std::uint32_t>(out->keys_.size() - part_at) : 0;
    return true;
  }
  void keyPart(string_view s) {
    if (!part_open) {
      part_open = true;
      part_kept = recorded();
      part_at = static_cast<std::uint32_t>(out->keys_.size());
    }
    if (part_kept) out->keys_.append(s.data(), s.size());
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    add(Kind::Int, 0, i);
    return true;
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    add(Kind::Uint, 0, static_cast<std::int64_t>(std::min(u, kMax)));
    return true;
  }
  bool on_double(double d, string_view, error_code&) {
    std::int64_t v = 0;
    if (d >= -9.2e18 && d <= 9.2e18) v = static_cast<std::int64_t>(d);
    add(Kind::Double, 0, v);
    return true;
  }
  bool on_bool(bool b, error_code&) {
    add(Kind::Bool, 0, b ? 1 : 0);
    return true;
  }
  bool on_null(error_code&) {
    add(Kind::Null);
    return true;
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

bool JsonOutline::parse(std::string_view text, int max_depth, boost::system::error_code& ec) {
  // A thread's scratch outline keeps what an ordinary event needs, not what the largest one did.
  constexpr std::size_t kKeepNodes = 1024, kKeepBytes = 16 * 1024;
  if (nodes_.capacity() > kKeepNodes) std::vector<Rec>().swap(nodes_);
  if (keys_.capacity() > kKeepBytes) std::string().swap(keys_);
  if (text_.capacity() > kKeepBytes) std::string().swap(text_);
  if (frames_.capacity() > kKeepNodes) std::vector<Frame>().swap(frames_);
  nodes_.clear();
  keys_.clear();
  text_.clear();
  ec = {};
  frames_.clear();
  if (max_depth < 0) return false;
  boost::json::basic_parser<Sink> p(jsonParseOptions(), frames_);
  Sink& s = p.handler();
  s.out = this;
  s.max_depth = static_cast<std::size_t>(max_depth);
  const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (!ec && n < text.size()) ec = boost::json::error::extra_data;
  if (ec) {
    nodes_.clear();
    return false;
  }
  return true;
}

JsonOutline& JsonOutline::scratch() {
  thread_local JsonOutline outline;
  return outline;
}

JsonOutline::Node JsonOutline::first(Node n) const {
  if (n == kNone) return kNone;
  // A container's first recorded child follows it at once (the records are in document order).
  const auto c = static_cast<std::size_t>(n) + 1;
  return c < nodes_.size() && nodes_[c].parent == n ? static_cast<Node>(c) : kNone;
}

JsonOutline::Node JsonOutline::member(Node o, std::string_view key) const {
  if (!is(o, Kind::Object)) return kNone;
  Node found = kNone;
  for (Node c = first(o); c != kNone; c = next(c)) {
    const Rec& r = nodes_[static_cast<std::size_t>(c)];
    if (r.key_len == key.size() && std::memcmp(keys_.data() + r.key_at, key.data(), key.size()) == 0) found = c;
  }
  return found;
}

JsonOutline::Node JsonOutline::element(Node a, std::size_t i) const {
  if (!is(a, Kind::Array) || i >= size(a)) return kNone;
  for (Node c = first(a); c != kNone; c = next(c))
    if (nodes_[static_cast<std::size_t>(c)].index == i) return c;
  return kNone;
}

std::string_view JsonOutline::text(Node n) const {
  if (!is(n, Kind::String)) return {};
  const Rec& r = nodes_[static_cast<std::size_t>(n)];
  return std::string_view(text_).substr(r.text_at, std::min<std::size_t>(r.size, kCaptured));
}

std::int64_t JsonOutline::integer(Node n) const {
  if (n == kNone) return 0;
  const Rec& r = nodes_[static_cast<std::size_t>(n)];
  return r.kind == Kind::Int || r.kind == Kind::Uint || r.kind == Kind::Double ? r.number : 0;
}

}  // namespace sluice
