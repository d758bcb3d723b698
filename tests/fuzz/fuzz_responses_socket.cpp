// The Responses WebSocket mode's messages (gateway/ResponsesSocket.hpp ResponseChain): any bytes,
// cut at NUL bytes into the messages of one socket, each prepared in turn and every accepted one
// kept for the next to chain from. Checks: no crash; an error message is a JSON object of type
// "error"; an accepted turn is a JSON object body with stream:true, an input array and no type,
// and keeps previous_response_id only when the socket holds no such response (the POST path then
// looks it up in the store); a warm-up answers with two JSON events.
#include <boost/json/parse.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "gateway/ResponseChain.hpp"

using namespace sluice;
namespace json = boost::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gateway::ResponsesSocketOptions o;
  o.kept_responses = 3;
  o.kept_bytes = 1u << 16;
  gateway::ResponseChain chain(o);
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  std::size_t pos = 0;
  int n = 0;
  while (pos <= all.size() && n < 16) {
    auto end = all.find('\0', pos);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view msg = all.substr(pos, end - pos);
    pos = end + 1;
    auto turn = chain.prepare(msg);
    if (turn.error) {
      boost::system::error_code ec;
      auto v = json::parse(*turn.error, ec);
      if (ec || !v.is_object() || v.as_object().at("type") != "error")
        fuzz::fail("an error message that is not an error object", *turn.error);
      continue;
    }
    if (turn.warmup) {
      auto events = chain.warmup(turn);
      if (events.size() != 2) fuzz::fail("a warm-up without its two events");
      for (const auto& e : events)
        if (!fuzz::isJson(e)) fuzz::fail("a warm-up event that is not JSON", e);
      continue;
    }
    boost::system::error_code ec;
    auto v = json::parse(turn.body, ec);
    if (ec || !v.is_object()) fuzz::fail("a turn body that is not a JSON object", turn.body);
    const auto& b = v.as_object();
    const auto* stream = b.if_contains("stream");
    const auto* input = b.if_contains("input");
    if (!stream || !stream->is_bool() || !stream->as_bool()) fuzz::fail("a turn body without stream:true", turn.body);
    if (!input || !input->is_array()) fuzz::fail("a turn body without an input array", turn.body);
    // previous_response_id stays only for the POST path to look up, when the socket holds none.
    if (b.contains("type") || (b.contains("previous_response_id") && !turn.from_store))
      fuzz::fail("a turn body that keeps WebSocket-only fields", turn.body);
    if (turn.from_store) {
      const auto* prev = b.if_contains("previous_response_id");
      if (!prev || !prev->is_string()) fuzz::fail("a turn for the store without the id to look up", turn.body);
      continue;  // not kept on the socket: its items are partial
    }
    chain.keep("resp_" + std::to_string(n++), std::move(turn.items), json::array{json::object{{"type", "message"}}});
  }
  return 0;
}
