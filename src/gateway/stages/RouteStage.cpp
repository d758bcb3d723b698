// route: what the client asks for, decided before anything is charged. The query that may
// travel upstream; the model listing (answered here); the method; the body's facts (one parse,
// kept for the protect stages when they will read it); the model-name rule; the channels that
// serve the model, less those the caller may not use or whose URL cannot take the name; and
// what the limits charge up front. Every refusal is in the caller's format.
#include <fmt/format.h>
#include "core/Ascii.hpp"
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <optional>

#include "core/JsonText.hpp"
#include "gateway/BodyFacts.hpp"
#include "gateway/Classify.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/LimitRefusal.hpp"
#include "gateway/Multipart.hpp"
#include "gateway/ObjectRoutes.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/TokenEstimate.hpp"
#include "gateway/stages/Stages.hpp"
#include "providers/UpstreamPath.hpp"
#include "routing/ModelName.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

// A call that is not chat-like reaches a vertex channel only when Vertex has it under the same
// name: Gemini's countTokens. (Anthropic's count_tokens and Gemini's embeddings are other APIs
// there: such a call is answered as for a channel that cannot take it.)
bool vertexTakes(const routing::Channel& c, const ClientCall& call) {
  return c.cfg.type != config::ChannelType::Vertex || (call.wire == Wire::Gemini && call.op == "countTokens");
}

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
    case Wire::Bedrock:
      break;
  }
  return json::object{};
}

class RouteStage final : public Stage {
 public:
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    // A streamed upload: its first bytes are read ahead, for the model field to route by.
    if (http::RequestBody* body = ex.r.body(); body && ex.call.passthrough) {
      while (!body->done() && ex.route.body_prefix.size() < kReadAhead) {
        auto [ec, piece] = co_await body->read();
        if (ec) {
          ex.rec.status = 400;
          ex.rec.error = "the request body broke: " + ec.message();
          if (std::optional<http::Response> reply = body->failure(ec)) {
            ex.rec.status = reply->result_int();
            co_await ex.r.send(std::move(*reply));
          } else {
            ex.r.abort();
          }
          co_return Step::Answered;
        }
        ex.route.body_prefix.append(piece);
      }
    }
    std::optional<http::Response> answer = decide(ex);
    if (!answer) co_return Step::Continue;
    co_await ex.r.send(std::move(*answer));
    co_return Step::Answered;
  }

 private:
  // How much of a streamed upload is read before it is routed: its model field is found when it
  // comes first or after a small file; otherwise the upload routes as a call without a model.
  static constexpr std::size_t kReadAhead = 64u * 1024;

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
    if (ex.call.passthrough) return routePassthrough(ex);
    if (ex.call.responses() && sluice::iequals(ex.req[bhttp::field::upgrade], "websocket"))
      return refused(ex, 426, "upgrade_required", "the WebSocket mode opens with GET /v1/responses");
    if (method != bhttp::verb::post)
      return refused(ex, 405, "method_not_allowed", fmt::format("{} takes POST", ex.ctx.path));
    return routeBody(ex);
  }

  static http::Response refused(Exchange& ex, int status, std::string_view code, const std::string& msg) {
    const std::string_view type = status == 403 ? "permission_error" : "invalid_request_error";
    return ex.failure(status, type, code, msg);
  }

  // The rest of the OpenAI API (images, audio, moderations, files, batches): to OpenAI-format
  // channels as it is. A body that names a model routes by it like a chat request; a call about a
  // file or batch goes to the channel that made it; anything else to the channel the
  // x-sluice-channel header names, or else the caller's first channel by priority.
  static std::optional<http::Response> routePassthrough(Exchange& ex) {
    const auto& snap = ex.snap;
    auto& call = ex.call;
    auto& route = ex.route;
    auto& rec = ex.rec;
    const auto* vk = ex.caller.vk;
    const std::string_view method = ex.req.method_string();
    bool listed = false;
    for (std::string_view rest = call.methods; !rest.empty();) {
      const auto sp = rest.find(' ');
      listed = listed || rest.substr(0, sp) == method;
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    if (!listed) {
      std::string takes(call.methods);
      if (auto sp = takes.find(' '); sp != std::string::npos) takes.replace(sp, 1, " or ");
      return refused(ex, 405, "method_not_allowed", fmt::format("{} takes {}", ex.ctx.path, takes));
    }
    if (!call.object_id.empty() && !validObjectId(call.object_id))
      return refused(ex, 400, "invalid_id",
                     "the id in the path must be 1-128 letters, digits, '-' or '_' (as the provider gave it)");
    const std::string& text = ex.req.body();
    std::string model;
    std::string file_ref;  // a batch's input file: its channel holds the batch too
    BodyFacts& facts = route.facts;
    const bool post = ex.req.method() == bhttp::verb::post;
    // A POST about an id (a batch's cancel) may come without a body.
    if (post && call.json_body && !(text.empty() && !call.object_id.empty())) {
      boost::system::error_code ec;
      json::value v = sluice::parseJson(text, ec);
      if (ec || !v.is_object()) return refused(ex, 400, "invalid_request", "the body must be a JSON object");
      const auto& o = v.as_object();
      if (const auto* m = o.if_contains("model")) {
        if (!m->is_string()) return refused(ex, 400, "invalid_request", "\"model\" must be a string");
        model = std::string(m->as_string());
      }
      if (const auto* st = o.if_contains("stream"); st && st->is_bool()) facts.stream = st->as_bool();
      if (const auto* sf = o.if_contains("stream_format"); sf && sf->is_string())
        facts.stream = sf->as_string() == "sse";
      if (const auto* f = o.if_contains("input_file_id"); f && f->is_string()) file_ref = std::string(f->as_string());
      if (snap.cfg->store.log_bodies) rec.request_body = text.substr(0, snap.cfg->store.log_body_max_bytes);
    } else if (post && call.multipart) {
      auto boundary = multipartBoundary(ex.req[bhttp::field::content_type]);
      if (!boundary) return refused(ex, 400, "invalid_request", "the body must be multipart/form-data with a boundary");
      const std::string_view form = ex.r.body() ? std::string_view(route.body_prefix) : std::string_view(text);
      if (auto m = multipartField(form, *boundary, "model")) model = std::move(*m);
      if (auto st = multipartField(form, *boundary, "stream")) facts.stream = *st == "true";
      // A key held to some models may not send what its read-ahead cannot see the model of.
      if (model.empty() && ex.r.body() && vk && !vk->allowed_models.empty() && call.op != "/files")
        return refused(ex, 400, "model_after_file",
                       fmt::format("this key ({}) may use only some models, and this upload is too large to read "
                                   "its model after the file: put the model field before the file",
                                   vk->name));
    }
    if (!model.empty()) {
      if (auto problem = routing::modelNameProblem(model)) {
        rec.model = routing::printableModelName(model);
        return refused(ex, 400, "invalid_model", routing::modelNameError(model, *problem));
      }
    }
    facts.model = model;
    rec.model = model;
    rec.stream = facts.stream;
    auto openaiApi = [](const routing::Channel* c) {
      return channelWire(c->cfg.type) == Wire::OpenAI && c->cfg.type != config::ChannelType::Azure;
    };
    auto& candidates = route.candidates;
    const std::string_view pinned = ex.req["x-sluice-channel"];
    std::optional<std::string> holder;
    if (ex.svc.objects) {
      if (!call.object_id.empty()) holder = ex.svc.objects->channelOf(call.object_id);
      if (!holder && !file_ref.empty()) holder = ex.svc.objects->channelOf(file_ref);
    }
    if (holder || !pinned.empty()) {
      const std::string name = holder ? *holder : std::string(pinned);
      const routing::Channel* c = snap.router->channelByName(name);
      if (!c)
        return refused(ex, 404, "channel_not_found",
                       fmt::format("no channel named \"{}\"", routing::printableModelName(name)));
      if (!openaiApi(c))
        return refused(ex, 400, "format_not_supported",
                       fmt::format("channel \"{}\" of type {} does not take {}", c->cfg.name,
                                   config::channelTypeName(c->cfg.type), ex.ctx.path));
      candidates = {c};
      route.routed_model = model;
    } else if (!model.empty()) {
      candidates = snap.router->candidates(model, route.routed_model);
      std::erase_if(candidates, [&](const routing::Channel* c) { return !openaiApi(c); });
      if (candidates.empty())
        return refused(ex, 404, "model_not_found",
                       fmt::format("model \"{}\" is not served by any OpenAI-format channel", model));
    } else {
      for (const auto& c : snap.router->channels())
        if (openaiApi(c.get()) && (!vk || vk->allowsChannel(c->cfg.name))) candidates.push_back(c.get());
      std::stable_sort(candidates.begin(), candidates.end(), [](const routing::Channel* a, const routing::Channel* b) {
        return a->cfg.priority < b->cfg.priority;
      });
      if (candidates.size() > 1) candidates.resize(1);  // a list or an upload is one provider's
      if (candidates.empty())
        return refused(ex, 404, "channel_not_found",
                       fmt::format("no OpenAI-format channel {}takes {}", vk ? "this key may use " : "", ex.ctx.path));
    }
    if (vk && !model.empty() && !vk->allowsModel(model) && !vk->allowsModel(route.routed_model))
      return refused(ex, 403, "model_not_allowed",
                     fmt::format("this key ({}) may not use model \"{}\"", vk->name, model));
    if (vk) {
      std::erase_if(candidates, [&](const routing::Channel* c) { return !vk->allowsChannel(c->cfg.name); });
      if (candidates.empty())
        return refused(ex, 403, "channel_not_allowed",
                       fmt::format("this key ({}) may not use the channel that serves {}", vk->name, ex.ctx.path));
    }
    if (route.routed_model.empty()) route.routed_model = model;
    route.est_tokens = 0;
    if (!model.empty()) ex.settle.price = snap.prices->find(route.routed_model);
    return std::nullopt;
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
    auto sameWire = [&](const routing::Channel* c) {
      return translatable || (channelWire(c->cfg.type, c->upstreamModel(route.routed_model)) == call.wire &&
                              vertexTakes(*c, call));
    };
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
        res.body() =
            json::serialize(anthropicCount ? json::object{{"input_tokens", *n}} : json::object{{"totalTokens", *n}});
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
           (!translatable && (channelWire(c->cfg.type, c->upstreamModel(routed)) != ex.call.wire || !vertexTakes(*c, ex.call))) || (vk && !vk->allowsChannel(c->cfg.name));
  });
  if (candidates.empty()) why = "no channel that serves it may take this request";
  return candidates;
}

std::unique_ptr<const StageConfig> makeRouteStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<RouteStage>>("route");
}

}  // namespace sluice::gateway
