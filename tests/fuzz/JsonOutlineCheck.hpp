// Whether a JsonOutline says what the tree parseJson builds from the same text says: the same
// error, and for every value the outline records, the same kind, size, first bytes and number.
// Shared by the unit test (tests/unit/core/JsonOutlineTest.cpp) and fuzz_json_outline.
#pragma once
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "core/JsonOutline.hpp"
#include "core/JsonText.hpp"

namespace sluice::outline_check {

// Empty when they agree; else what differs first.
inline std::string compareNode(const JsonOutline& o, JsonOutline::Node n, const boost::json::value& v, int level,
                               int depth, const std::string& where) {
  using K = JsonOutline::Kind;
  if (level > depth) return o.has(n) ? where + ": recorded below the depth" : "";
  if (!o.has(n)) return where + ": missing";
  K want = K::Null;
  switch (v.kind()) {
    case boost::json::kind::null: want = K::Null; break;
    case boost::json::kind::bool_: want = K::Bool; break;
    case boost::json::kind::int64: want = K::Int; break;
    case boost::json::kind::uint64: want = K::Uint; break;
    case boost::json::kind::double_: want = K::Double; break;
    case boost::json::kind::string: want = K::String; break;
    case boost::json::kind::array: want = K::Array; break;
    case boost::json::kind::object: want = K::Object; break;
  }
  if (o.kind(n) != want) return where + ": kind";
  if (v.is_bool() && o.boolean(n) != v.as_bool()) return where + ": bool";
  if (v.is_int64() && o.integer(n) != v.as_int64()) return where + ": int64";
  if (v.is_string()) {
    const auto& s = v.as_string();
    if (o.size(n) != s.size()) return where + ": string size";
    const std::string_view head(s.data(), std::min<std::size_t>(s.size(), JsonOutline::kCaptured));
    if (o.text(n) != head) return where + ": string bytes";
    if (o.whole(n) != (s.size() <= JsonOutline::kCaptured)) return where + ": whole";
  }
  if (v.is_array()) {
    const auto& a = v.as_array();
    if (o.size(n) != a.size()) return where + ": array size";
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto e = compareNode(o, o.element(n, i), a[i], level + 1, depth, where + "/" + std::to_string(i));
      if (!e.empty()) return e;
    }
  }
  if (v.is_object()) {
    // A repeated key is one member of the tree (its last value); the outline counts members as
    // written, so it has at least as many.
    const auto& obj = v.as_object();
    if (o.size(n) < obj.size()) return where + ": object size";
    for (const auto& kv : obj) {
      auto e = compareNode(o, o.member(n, kv.key()), kv.value(), level + 1, depth,
                           where + "/" + std::string(kv.key()));
      if (!e.empty()) return e;
    }
  }
  return "";
}

inline std::string compare(std::string_view text, int depth) {
  boost::system::error_code tree_ec, outline_ec;
  const boost::json::value v = parseJson(text, tree_ec);
  JsonOutline& o = JsonOutline::scratch();
  const bool ok = o.parse(text, depth, outline_ec);
  if (ok == static_cast<bool>(tree_ec)) return "accepted by one and not the other";
  if (outline_ec != tree_ec) return "a different error: " + outline_ec.message() + " vs " + tree_ec.message();
  if (!ok) return "";
  return compareNode(o, JsonOutline::kRoot, v, 0, depth, "");
}

}  // namespace sluice::outline_check
