// route: what the client asks for, decided before anything is charged. The query that may
// travel upstream; the model listing (answered here); the method; the body's facts (one parse,
// kept for the protect stages when they will read it); the model-name rule; the channels that
// serve the model, less those the caller may not use or whose URL cannot take the name; and
// what the limits charge up front. Every refusal is in the caller's format.
#include <fmt/format.h>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>

#include "gateway/BodyFacts.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/TokenEstimate.hpp"
#include "gateway/stages/Stages.hpp"
#include "providers/UpstreamPath.hpp"
#include "routing/ModelName.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

// The models the channels serve, in the listing shape of the client's API.
json::value modelList(const Snapshot& snap, Wire w, const pipeline::VirtualKeyEntry* vk) {
  json::array data;
  auto names = snap.router->modelNames();
  if (vk) std::erase_if(names, [&](const std::string& n) { return !vk->allowsModel(n); });
  switch (w) {
    case Wire::OpenAI:
      for (const auto& name : names)
        data.push_back(json::object{{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "sluice"}});
      return json::object{{"object", "list"}, {"data", std::move(data)}};
    case Wire::Anthropic: {
      for (const auto& name : names)
        data.push_back(json::object{
            {"type", "model"}, {"id", name}, {"display_name", name}, {"created_at", "1970-01-01T00:00:00Z"}});
      json::value first = names.empty() ? json::value(nullptr) : json::value(names.front());
      json::value last = names.empty() ? json::value(nullptr) : json::value(names.back());
      return json::object{{"data", std::move(data)}, {"has_more", false}, {"first_id", first}, {"last_id", last}};
    }
    case Wire::Gemini:
      for (const auto& name : names)
        data.push_back(json::object{
            {"name", "models/" + name},
            {"displayName", name},
            {"supportedGenerationMethods", json::array{"generateContent", "streamGenerateContent", "countTokens"}}});
      return json::object{{"models", std::move(data)}};
  }
  return json::object{};
}

class RouteStage final : public Stage {
 public:
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    std::optional<http::Response> answer = decide(ex);
    if (!answer) co_return Step::Continue;
    co_await ex.r.send(std::move(*answer));
    co_return Step::Answered;
  }

 private:
  // The answer this stage gives (a refusal, or the model list), or nullopt: routed.
  static std::optional<http::Response> decide(Exchange& ex) {
    // What of the client's query may travel upstream: re-encoded, the gateway's key left out.
    providers::ForwardedQuery forwarded = providers::forwardQuery(ex.ctx.query);
    if (!forwarded.problem.empty()) return refused(ex, 400, "invalid_query", forwarded.problem);
    ex.call.query = std::move(forwarded.query);

    const auto method = ex.req.method();
    if (ex.call.models_list) {
      if (method != bhttp::verb::get)
        return refused(ex, 405, "method_not_allowed", fmt::format("{} takes GET", ex.ctx.path));
      ex.rec.status = 200;
      http::Response res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "application/json");
      res.set("x-request-id", ex.ctx.id);
      res.body() = json::serialize(modelList(ex.snap, ex.call.wire, ex.caller.vk));
      return res;
    }
    if (ex.call.responses() && boost::beast::iequals(ex.req[bhttp::field::upgrade], "websocket"))
      return refused(ex, 426, "upgrade_required", "the WebSocket mode opens with GET /v1/responses");
    if (method != bhttp::verb::post)
      return refused(ex, 405, "method_not_allowed", fmt::format("{} takes POST", ex.ctx.path));
    return routeBody(ex);
  }

  static http::Response refused(Exchange& ex, int status, std::string_view code, const std::string& msg) {
    const std::string_view type = status == 403 ? "permission_error" : "invalid_request_error";
    return ex.failure(status, type, code, msg);
  }

  static std::optional<http::Response> routeBody(Exchange& ex) {
    const auto& snap = ex.snap;
    const auto& cfg = *snap.cfg;
    const auto& call = ex.call;
    auto& rec = ex.rec;
    auto& route = ex.route;
    const auto* vk = ex.caller.vk;
    const std::string& text = ex.req.body();
    // With redaction on, bodies are logged once redacted (by the redaction stage); a request
    // refused before that logs none, so the log never holds what redaction keeps from leaving.
    if (cfg.store.log_bodies && !snap.redactionOn()) rec.request_body = text.substr(0, cfg.store.log_body_max_bytes);
    // When protect stages will read the body too, the parse is kept for them (in storage of this
    // request's own: the per-thread arena does not outlive a suspension).
    const bool keepParse =
        call.translatable() && (snap.redactionOn() || snap.guardrailOn() ||
                                snap.screeningDefault() != config::ScreenAction::Off || (vk && vk->screening));
    if (keepParse) route.parsed = std::make_unique<ParsedBody>();
    route.facts = inspectBody(text, call, route.parsed ? &route.parsed->doc : nullptr);
    const BodyFacts& facts = route.facts;
    if (!facts.error.empty()) return refused(ex, 400, facts.error_code, facts.error);
    const std::string& model = facts.model;
    // The name reaches upstream URLs and logs: it follows the model-name rule before any routing
    // (so a channel glob only ever sees valid names) and any upstream byte.
    if (auto problem = routing::modelNameProblem(model)) {
      rec.model = routing::printableModelName(model);
      return refused(ex, 400, "invalid_model", routing::modelNameError(model, *problem));
    }
    rec.model = model;
    rec.stream = facts.stream;

    auto& candidates = route.candidates;
    candidates = snap.router->candidates(model, route.routed_model);
    if (vk && !vk->allowsModel(model) && !vk->allowsModel(route.routed_model))
      return refused(ex, 403, "model_not_allowed",
                     fmt::format("this key ({}) may not use model \"{}\"", vk->name, model));
    // Gemini and Azure channels put the model in the URL path as one segment: one that cannot
    // take this name (a '/' in it) is no candidate, and when no other channel serves it, the
    // client hears why.
    if (!candidates.empty()) {
      std::string pathProblem;
      std::erase_if(candidates, [&](const routing::Channel* c) {
        auto p = providers::pathModelProblem(c->cfg.type, c->upstreamModel(route.routed_model));
        if (p && pathProblem.empty())
          pathProblem =
              fmt::format("\"model\" \"{}\" cannot be sent to channel \"{}\": the name it goes upstream as {}",
                          routing::printableModelName(model), c->cfg.name, *p);
        return p.has_value();
      });
      if (candidates.empty()) return refused(ex, 400, "invalid_model", pathProblem);
    }
    // Channels of the client's own format take the request as it is; chat requests are
    // translated between the formats. When the preferred channel can take it neither way, say
    // so rather than quietly answering from a lower-priority one.
    const bool translatable = call.translatable();
    auto sameWire = [&](const routing::Channel* c) { return translatable || channelWire(c->cfg.type) == call.wire; };
    if (!candidates.empty() && !sameWire(candidates.front())) {
      // A token count for a model whose provider cannot count: an estimate, marked as one.
      if (const bool anthropicCount = call.wire == Wire::Anthropic && call.op == "/v1/messages/count_tokens";
          anthropicCount || (call.wire == Wire::Gemini && call.op == "countTokens")) {
        const auto n = estimateCountTokens(text);
        if (!n) return refused(ex, 400, "invalid_request", "the body must be a JSON object");
        rec.status = 200;
        rec.channel = candidates.front()->cfg.name;
        http::Response res{bhttp::status::ok, 11};
        res.set(bhttp::field::content_type, "application/json");
        res.set("x-request-id", ex.ctx.id);
        res.set("x-sluice-token-count", "estimate");
        res.body() = json::serialize(anthropicCount ? json::object{{"input_tokens", *n}}
                                                    : json::object{{"totalTokens", *n}});
        return res;
      }
      const auto* c = candidates.front();
      return refused(ex, 501, "format_not_supported",
                     fmt::format("model \"{}\" is served by channel \"{}\" of type {}, and relaying "
                                 "{}-format requests to that provider's API is not supported yet",
                                 model, c->cfg.name, config::channelTypeName(c->cfg.type), wireName(call.wire)));
    }
    std::erase_if(candidates, [&](const routing::Channel* c) { return !sameWire(c); });
    if (candidates.empty()) {
      auto names = snap.router->modelNames();
      std::string list;
      std::size_t shown = 0;
      for (std::size_t i = 0; i < names.size() && shown < 50; ++i) {
        if (vk && !vk->allowsModel(names[i])) continue;
        list += (shown++ ? ", " : "") + names[i];
      }
      return refused(ex, 404, "model_not_found",
                     fmt::format("model \"{}\" is not served by any channel; available: {}", model,
                                 list.empty() ? "(none configured)" : list));
    }
    if (vk) {
      std::erase_if(candidates, [&](const routing::Channel* c) { return !vk->allowsChannel(c->cfg.name); });
      if (candidates.empty())
        return refused(ex, 403, "channel_not_allowed",
                       fmt::format("this key ({}) may not use any channel that serves model \"{}\"", vk->name, model));
    }
    // What goes upstream: the original bytes unless the model name or usage option must change.
    route.inject_usage =
        call.wire == Wire::OpenAI && facts.stream && !facts.asked_usage && call.op == "/chat/completions";
    route.est_tokens = estimateTokens(text, facts.max_tokens);
    ex.settle.price = snap.prices->find(route.routed_model);
    return std::nullopt;
  }
};

}  // namespace

std::vector<const routing::Channel*> fallbackCandidates(const Exchange& ex, const std::string& model,
                                                        std::string& routed, std::string& why) {
  const auto& snap = ex.snap;
  const auto* vk = ex.caller.vk;
  if (routing::modelNameProblem(model)) {
    why = "not a valid model name";
    return {};
  }
  auto candidates = snap.router->candidates(model, routed);
  if (candidates.empty()) {
    why = "no channel serves it";
    return candidates;
  }
  if (vk && !vk->allowsModel(model) && !vk->allowsModel(routed)) {
    why = fmt::format("this key ({}) may not use it", vk->name);
    return {};
  }
  const bool translatable = ex.call.translatable();
  std::erase_if(candidates, [&](const routing::Channel* c) {
    return providers::pathModelProblem(c->cfg.type, c->upstreamModel(routed)).has_value() ||
           (!translatable && channelWire(c->cfg.type) != ex.call.wire) || (vk && !vk->allowsChannel(c->cfg.name));
  });
  if (candidates.empty()) why = "no channel that serves it may take this request";
  return candidates;
}

std::unique_ptr<const StageConfig> makeRouteStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<RouteStage>>("route");
}

}  // namespace sluice::gateway
