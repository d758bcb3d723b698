// Stored responses' parsers (gateway/ResponseHistory.hpp, gateway/ResponseCapture.hpp): any
// bytes as (1) an answer the capture reads, streamed in fuzzer-chosen pieces or whole, (2) a
// POST /v1/responses body made self-contained from itself as the earlier response, and (3) an
// input_items query over the body's items. Input: [option byte] [split byte] [payload...].
// Checks: no crash; a captured response is an object with a string id; a rewritten body is a
// JSON object without previous_response_id whose input is an array; a list page is JSON with
// at most `limit` items and first_id / last_id naming its ends; error bodies are JSON.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

#include "FuzzUtil.hpp"
#include "gateway/ResponseCapture.hpp"
#include "gateway/ResponseHistory.hpp"

using namespace sluice;
namespace json = boost::json;
namespace history = gateway::history;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t opt = data[0];
  const std::string_view payload(reinterpret_cast<const char*>(data + 2), size - 2);

  // (1) the capture
  gateway::ResponseCapture capture((opt & 2) != 0 ? 256 : 1u << 20);
  const bool stream = (opt & 1) != 0;
  capture.start(stream);
  fuzz::feedSplit(payload, data[1], [&](std::string_view piece) {
    capture.feed(piece);
    return true;
  });
  capture.finish();
  if (auto r = capture.take()) {
    const auto* id = r->if_contains("id");
    if (id == nullptr || !id->is_string() || id->as_string().empty()) fuzz::fail("a captured response without an id");
    if (!fuzz::isJson(json::serialize(*r))) fuzz::fail("a captured response that does not serialize");
  }

  // (2) a body continuing itself
  boost::system::error_code ec;
  json::value v = sluice::parseJson(payload, ec);
  if (!ec && v.is_object()) {
    json::object body = v.as_object();
    history::Turn turn = history::readTurn(body, true);
    if (turn.own) {
      json::array whole = history::chainedInput(*turn.own, body, *turn.own);
      history::rewriteBody(body, &whole, turn.keep);
      json::value back = json::parse(json::serialize(body), ec);
      if (ec || !back.is_object()) fuzz::fail("a rewritten body that is not an object");
      if (back.as_object().contains("previous_response_id")) fuzz::fail("a rewritten body kept previous_response_id");
      const auto* in = back.as_object().if_contains("input");
      if (in == nullptr || !in->is_array()) fuzz::fail("a rewritten body without an input array");

      // (3) the listing, with the payload's prefix as its query
      std::string error, param;
      auto q = history::parseListQuery(payload.substr(0, 64), error, param);
      if (!q) q = history::ListQuery{};
      json::object page = history::listPage(whole, "resp_fuzz", *q);
      if (!fuzz::isJson(json::serialize(page))) fuzz::fail("a list page that is not JSON");
      const auto& items = page.at("data").as_array();
      if (items.size() > q->limit) fuzz::fail("a list page longer than its limit");
      if (!items.empty() && page.at("first_id").is_null()) fuzz::fail("a list page without its first_id");
    }
    if (turn.previous && !fuzz::isJson(history::previousNotFoundBody(*turn.previous)))
      fuzz::fail("an error body that is not JSON");
  }
  if (history::validId(payload) !=
      (!payload.empty() && payload.size() <= history::kMaxIdLength &&
       payload.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
           std::string_view::npos))
    fuzz::fail("validId disagrees with its rule", payload);
  if (!fuzz::isJson(history::notFoundBody(payload))) fuzz::fail("a not-found body that is not JSON");
  return 0;
}
