// responses: stored responses on any provider (store.responses). For a POST /v1/responses
// that continues another (previous_response_id), the stored response of the caller's key is
// looked up and the request made self-contained (its input: the earlier input, the earlier
// output, then its own), so any channel, translated or native, gets the whole conversation;
// the answer of a request that is stored (store absent or true) is read on its way back from
// what the client gets and kept when it stands. GET and DELETE /v1/responses/{id} and
// GET .../input_items are answered here. A key reads and deletes only its own responses (the
// master key is an owner of its own).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>

#include "config/Config.hpp"
#include "core/Clock.hpp"
#include "core/JsonText.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/ResponseCapture.hpp"
#include "gateway/ResponseHistory.hpp"
#include "gateway/ResponseStoreService.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

std::int64_t ownerOf(const Exchange& ex) {
  return ex.caller.vk ? ex.caller.vk->id : 0;
}

class ResponsesStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) {
    if (ex.svc.responses == nullptr) return false;
    if (ex.call.storedResponse()) return true;
    return ex.call.responses() && ex.req.method() == bhttp::verb::post && ex.snap.cfg->store.responses.enabled;
  }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    if (ex.call.storedResponse()) {
      co_await answerStored(ex);
      co_return Step::Answered;
    }
    const auto& cfg = ex.snap.cfg->store.responses;
    boost::system::error_code ec;
    json::value parsed = sluice::parseJson(ex.req.body(), ec);
    if (ec || !parsed.is_object()) co_return Step::Continue;  // the route stage refuses it
    json::object& body = parsed.as_object();
    history::Turn turn = history::readTurn(body, true);
    if (!turn.keep && !turn.previous) co_return Step::Continue;

    json::array whole;
    if (turn.previous) {
      if (!turn.own) {
        co_await send(
            ex, 400,
            R"({"error":{"message":"input must be a string or an array of items","type":"invalid_request_error","param":"input","code":"invalid_type"}})",
            "input must be a string or an array of items");
        co_return Step::Answered;
      }
      std::optional<json::object> prevResponse;
      std::optional<json::array> prevInput;
      if (history::validId(*turn.previous)) {
        telemetry::ScopedSpan span(ex.trace, "stored response lookup");
        const std::int64_t owner = ownerOf(ex);
        ResponseStoreService::Lookup found = co_await ex.svc.responses->get(owner, *turn.previous);
        span.end();
        if (!found.available) {
          co_await unavailable(ex);
          co_return Step::Answered;
        }
        if (found.row) {
          json::value r = sluice::parseJson(found.row->response, ec);
          if (!ec && r.is_object()) prevResponse = std::move(r.as_object());
          json::value in = sluice::parseJson(found.row->input_items, ec);
          if (!ec && in.is_array()) prevInput = std::move(in.as_array());
        }
      }
      if (!prevResponse || !prevInput) {
        const std::string reply = history::previousNotFoundBody(*turn.previous);
        co_await send(ex, 400, reply, "previous_response_id names no stored response of this key");
        co_return Step::Answered;
      }
      whole = history::chainedInput(*prevInput, *prevResponse, *turn.own);
    } else if (turn.own) {
      whole = *turn.own;
    } else {
      turn.keep = false;  // an input of the wrong type: the codec (or OpenAI) refuses it
    }
    // Rewritten only when something changes: a chain, or a kept answer whose request did not
    // say store: true (a translated answer echoes what the request said).
    const json::value* said = body.if_contains("store");
    if (turn.previous || (turn.keep && !(said != nullptr && said->is_bool()))) {
      history::rewriteBody(body, turn.previous ? &whole : nullptr, turn.keep);
      ex.req.body() = json::serialize(body);
      ex.req.prepare_payload();
    }
    if (turn.keep) {
      keep_ = true;
      items_ = std::move(whole);
      previous_ = std::move(turn.previous);
      capture_.emplace(static_cast<std::size_t>(cfg.max_bytes));
    }
    co_return Step::Continue;
  }

  unsigned hooks() const override { return keep_ ? kResponseHeaders | kResponseData | kResponseCommit : 0u; }

  // Each attempt's answer is read afresh, as the client gets it (after any restore).
  void onResponseHeaders(Exchange&, ResponseHead& h) override { capture_->start(h.stream); }

  DataStep onResponseData(Exchange&, ResponseData& d) override {
    capture_->feed(d.out);
    if (d.end_of_stream) capture_->finish();
    return DataStep::Continue;
  }

  // Kept before the answer's last bytes go out: a GET right after it finds it.
  boost::asio::awaitable<void> onResponseCommit(Exchange& ex, const ResponseEnd& e) override {
    if (e.status < 200 || e.status > 299) co_return;
    const auto& cfg = ex.snap.cfg->store.responses;
    std::optional<json::object> response = capture_->take();
    if (!response) {
      if (capture_->tooLarge())
        spdlog::info("stored responses: the answer to {} is not kept: it is larger than store.responses.max_bytes ({})",
                     ex.ctx.id, cfg.max_bytes);
      co_return;
    }
    const std::string id(response->at("id").as_string());
    if (!history::validId(id)) {
      spdlog::info("stored responses: the answer to {} is not kept: its id is not one the gateway can look up",
                   ex.ctx.id);
      co_return;
    }
    history::markStored(*response, previous_);
    store::StoredResponse row;
    row.id = id;
    row.owner_key_id = ownerOf(ex);
    row.created_at_ms = unixNowMs();
    row.expires_at_ms = row.created_at_ms + cfg.ttl.count();
    row.response = json::serialize(*response);
    row.input_items = json::serialize(items_);
    if (row.response.size() + row.input_items.size() > cfg.max_bytes) {
      spdlog::info(
          "stored responses: {} is not kept: {} bytes of input and output is over store.responses.max_bytes "
          "({}); a request continuing it gets previous_response_not_found",
          id, row.response.size() + row.input_items.size(), cfg.max_bytes);
      co_return;
    }
    telemetry::ScopedSpan span(ex.trace, "stored response write");
    co_await ex.svc.responses->put(row);
  }

 private:
  // GET /v1/responses/{id}, DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items.
  static boost::asio::awaitable<void> answerStored(Exchange& ex) {
    const auto method = ex.req.method();
    const std::string& id = ex.call.stored_id;
    const bool items = ex.call.stored_items;
    if (method != bhttp::verb::get && (items || method != bhttp::verb::delete_)) {
      const std::string msg = fmt::format("{} takes {}", ex.ctx.path, items ? "GET" : "GET or DELETE");
      http::Response res = ex.failure(405, "invalid_request_error", "method_not_allowed", msg);
      co_await ex.r.send(std::move(res));
      co_return;
    }
    if (!history::validId(id)) {
      const std::string body = json::serialize(json::object{
          {"error", json::object{{"message",
                                  "Invalid 'response_id': expected an id such as 'resp_...' of up to 128 letters, "
                                  "digits, '_' or '-'."},
                                 {"type", "invalid_request_error"},
                                 {"param", "response_id"},
                                 {"code", "invalid_value"}}}});
      co_await send(ex, 400, body, "invalid response id");
      co_return;
    }
    const bool enabled = ex.snap.cfg->store.responses.enabled;
    history::ListQuery lq;
    if (items) {
      std::string error, param;
      auto q = history::parseListQuery(ex.ctx.query, error, param);
      if (!q) {
        const std::string body = json::serialize(json::object{
            {"error",
             json::object{
                 {"message", error}, {"type", "invalid_request_error"}, {"param", param}, {"code", nullptr}}}});
        co_await send(ex, 400, body, error);
        co_return;
      }
      lq = std::move(*q);
    }
    ResponseStoreService::Lookup found;
    const std::int64_t owner = ownerOf(ex);
    if (enabled && method == bhttp::verb::delete_) {
      found = co_await ex.svc.responses->remove(owner, id);
    } else if (enabled) {
      found = co_await ex.svc.responses->get(owner, id);
    }
    if (!found.available) {
      co_await unavailable(ex);
      co_return;
    }
    if (!found.row) {
      const std::string reply = history::notFoundBody(id);
      co_await send(ex, 404, reply, "no stored response of this key has that id");
      co_return;
    }
    if (method == bhttp::verb::delete_) {
      const std::string reply = history::deletedBody(id);
      co_await send(ex, 200, reply, {});
      co_return;
    }
    if (!items) {
      co_await send(ex, 200, found.row->response, {});
      co_return;
    }
    boost::system::error_code ec;
    json::value in = sluice::parseJson(found.row->input_items, ec);
    const json::array none;
    const json::object page = history::listPage(!ec && in.is_array() ? in.as_array() : none, id, lq);
    const std::string body = json::serialize(page);
    co_await send(ex, 200, body, {});
  }

  static boost::asio::awaitable<void> unavailable(Exchange& ex) {
    const std::string msg = "the response store is unavailable; try again shortly";
    http::Response res = ex.failure(503, "api_error", "store_unavailable", msg);
    co_await ex.r.send(std::move(res));
  }

  // An answer of this stage's own (OpenAI's exact shapes, which ex.failure does not make).
  static boost::asio::awaitable<void> send(Exchange& ex, int status, std::string_view body, std::string_view error) {
    ex.rec.status = status;
    if (!error.empty()) ex.rec.error = std::string(error);
    http::Response res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, "application/json");
    res.set("x-request-id", ex.ctx.id);
    ex.answer.apply(res);
    res.body() = std::string(body);
    res.prepare_payload();
    co_await ex.r.send(std::move(res));
  }

  bool keep_ = false;
  json::array items_;  // the request's whole input, as kept
  std::optional<std::string> previous_;
  std::optional<ResponseCapture> capture_;
};

}  // namespace

std::unique_ptr<const StageConfig> makeResponsesStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<ResponsesStage>>("responses");
}

}  // namespace sluice::gateway
