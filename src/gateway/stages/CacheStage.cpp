// cache: the exact response cache, on the (redacted) body. The request's controls
// (Cache-Control, x-sluice-cache) and the gateway's, the key's and the channel's settings decide
// whether to read and whether to write. A hit answers here, streamed or whole in the client's
// format, and costs nothing upstream (the limits get their reservations back); a miss that may
// be written records the answer on its way back (the response hooks) and stores it when it
// stands, before its last bytes go out.
#include <boost/beast/http/field.hpp>

#include "cache/Controls.hpp"
#include "cache/Recorder.hpp"
#include "cache/Replay.hpp"
#include "core/Clock.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "metrics/Metrics.hpp"
#include "pipeline/Pricing.hpp"
#include "providers/Translate.hpp"
#include "redact/Restorer.hpp"
#include "telemetry/RequestTrace.hpp"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;

namespace {

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// A cached entry with the tokens of this request's scope opened (the entry keeps them sealed).
std::shared_ptr<const cache::Entry> restoredEntry(const std::shared_ptr<const cache::Entry>& e,
                                                  const redact::TokenCipher& cipher, redact::RestoreStats& st,
                                                  const redact::SealMemo* memo) {
  std::shared_ptr<cache::Entry> copy;
  for (std::size_t i = 0; i < e->response.content.size(); ++i) {
    const auto& part = e->response.content[i];
    const bool args = part.kind == providers::Part::Kind::ToolCall;
    const std::string& text = args ? part.arguments : part.text;
    if (text.find(redact::kTokenPrefix) == std::string::npos) continue;
    std::string restored = redact::restoreAll(text, cipher, args ? 1 : 0, &st, memo);
    if (restored == text) continue;
    if (!copy) copy = std::make_shared<cache::Entry>(*e);
    auto& dst = copy->response.content[i];
    (args ? dst.arguments : dst.text) = std::move(restored);
    if (i < copy->pieces.size()) copy->pieces[i].clear();  // one piece: the delta sizes changed
  }
  return copy ? std::shared_ptr<const cache::Entry>(std::move(copy)) : e;
}

// Answers from a cache entry, streamed or whole, in the client's format.
// `sealed`: the entry as stored (for the log when `e` had tokens opened).
boost::asio::awaitable<void> replayHit(Exchange& ex, const cache::Entry& e, const cache::Entry& sealed) {
  auto& r = ex.r;
  auto& rec = ex.rec;
  const auto& ctx = ex.ctx;
  const auto fmt = ex.call.format();
  cache::ReplayOptions ro;
  ro.include_usage = ex.route.facts.asked_usage;
  ro.gemini_json_array = ex.geminiJsonArray();
  if (ex.call.responses()) {
    // The Responses answer echoes request fields: take them from a translation of this request.
    std::string scratch;
    providers::RequestInfo info;
    providers::TranslateContext tc;
    if (!providers::translateRequest(fmt, providers::Format::OpenAIChat, ex.req.body(), scratch, tc, &info))
      ro.responses_echo = std::move(info.responses_echo);
  }
  const std::int64_t age = std::max<std::int64_t>(0, (unixNowMs() - e.stored_at_ms) / 1000);
  rec.channel = "cache";
  rec.status = e.status;
  rec.attempts = 0;
  if (e.response.usage.input >= 0) rec.input_tokens = e.response.usage.input;
  if (e.response.usage.output >= 0) rec.output_tokens = e.response.usage.output;
  rec.cached_tokens = std::max<std::int64_t>(e.response.usage.cached, 0);
  rec.cache_write_tokens = std::max<std::int64_t>(e.response.usage.cache_creation, 0);
  rec.reasoning_tokens = std::max<std::int64_t>(e.response.usage.reasoning, 0);
  const bool logSealed = &e != &sealed && ex.body_cap > 0;
  if (logSealed) ex.keepBody(cache::replayWhole(fmt, sealed, ro));
  if (ex.route.facts.stream) {
    std::vector<std::string> chunks = cache::replayStream(fmt, e, ro);
    std::string lines;
    lines.append(ro.gemini_json_array ? "Content-Type: application/json\r\n"
                                      : "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n");
    lines.append("x-request-id: ").append(ctx.id).append("\r\n");
    lines.append("x-sluice-channel: cache\r\nx-sluice-attempts: 0\r\n");
    lines.append("age: ").append(std::to_string(age)).append("\r\n");
    ex.answer.appendLines(lines);
    co_await r.beginStream(e.status, "OK", lines);
    rec.ttfb_ms = msSince(ctx.start);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (!logSealed) ex.keepBody(chunks[i]);
      const bool last = i + 1 == chunks.size();
      bool written = last ? co_await r.writeLastChunk(chunks[i]) : co_await r.writeChunk(chunks[i]);
      if (!written) {
        rec.status = 499;
        rec.error = "client closed the connection mid-stream";
        co_return;
      }
    }
    if (!r.finished()) co_await r.endStream();
    co_return;
  }
  http::Response res{static_cast<bhttp::status>(e.status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-request-id", ctx.id);
  res.set("x-sluice-channel", "cache");
  res.set("x-sluice-attempts", "0");
  res.set(bhttp::field::age, std::to_string(age));
  ex.answer.apply(res);
  res.body() = cache::replayWhole(fmt, e, ro);
  if (!logSealed) ex.keepBody(res.body());
  rec.ttfb_ms = msSince(ctx.start);
  co_await r.send(std::move(res));
}

class CacheStage final : public Stage {
 public:
  static bool applies(const Exchange& ex) { return ex.svc.cache != nullptr && ex.call.translatable(); }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const auto& snap = ex.snap;
    const auto& cc = snap.safety->cache();
    const auto* vk = ex.caller.vk;
    const auto& firstCh = ex.route.candidates.front()->cfg;
    auto& headers = ex.answer.headers;
    const cache::RequestControls controls =
        cache::parseRequestControls(ex.req[bhttp::field::cache_control], ex.req["x-sluice-cache"]);
    cache::CacheSettings gateway{snap.cacheOn(), cc.ttl};
    cache::CacheSettings keySettings;
    if (vk) keySettings = cache::CacheSettings{vk->cache, vk->cache_ttl};
    cache::CacheSettings channel{firstCh.cache, firstCh.cache_ttl};
    const cache::CacheDecision d = cache::decide(controls, gateway, keySettings, channel);
    if (!d.read && !d.write) co_return Step::Continue;
    std::optional<std::int64_t> vkId;
    if (vk) vkId = vk->id;
    const std::string ns = cache::namespaceFor(vkId, cc.shared);
    cache::KeyResult kr = cache::makeCacheKey(ex.call.format(), ex.req.body(), ns, ex.call.model);
    if (!kr.key) {
      headers.emplace_back("x-sluice-cache", "uncacheable");
      co_return Step::Continue;
    }
    if (d.read) {
      telemetry::ScopedSpan span(ex.trace, "cache lookup");
      std::shared_ptr<const cache::Entry> hit = co_await ex.svc.cache->get(*kr.key);
      if (span) span->set("sluice.cache", hit ? "hit" : "miss");
      span.end();
      if (hit) {
        co_await answerHit(ex, hit);
        co_return Step::Answered;
      }
      headers.emplace_back("x-sluice-cache", "miss");
    } else {
      headers.emplace_back("x-sluice-cache", "refresh");
    }
    if (d.write) {
      key_ = std::move(*kr.key);
      ttl_ = d.ttl;
      max_entry_ = cc.max_entry_bytes;
      ex.answer.force_translate = true;  // Responses clients: record a decodable stream
    }
    co_return Step::Continue;
  }

  // A miss that may be written records the answer on its way back and stores it when it stands.
  unsigned hooks() const override { return key_ ? kResponseHeaders | kResponseData | kResponseCommit : 0u; }

  // Each attempt's answer is recorded afresh, from the upstream's own bytes in the upstream's
  // format, tokens and all: a replay is restored per request.
  void onResponseHeaders(Exchange&, ResponseHead& h) override {
    recorded_.reset();
    recorder_.reset();
    if (h.stream) recorder_ = cache::Recorder::forStream(h.upstream_format, max_entry_);
    format_ = h.upstream_format;
    status_ = h.status;
  }

  DataStep onResponseData(Exchange& ex, ResponseData& d) override {
    if (!recorder_) {  // a whole answer: one piece
      if (d.end_of_stream) keep(ex, cache::Recorder::fromAnswer(format_, status_, d.upstream, max_entry_));
      return DataStep::Continue;
    }
    recorder_->feed(d.upstream);
    if (d.end_of_stream) keep(ex, recorder_->finish());
    return DataStep::Continue;
  }

  // Stored before the answer's last bytes go out: an immediate repeat finds it.
  boost::asio::awaitable<void> onResponseCommit(Exchange& ex, const ResponseEnd& e) override {
    if (!recorded_ || e.status < 200 || e.status > 299) co_return;
    const std::shared_ptr<const cache::Entry> entry = std::move(recorded_);
    co_await ex.svc.cache->put(*key_, entry, ttl_);
  }

 private:
  void keep(const Exchange& ex, std::optional<cache::Entry> entry) {
    if (!entry) return;
    // Bedrock Converse answers name neither an id nor a model: the entry is recorded as the client
    // got the answer, with the id and model the translation gave it, so a replay carries both.
    if (format_ == providers::Format::BedrockConverse) {
      if (entry->response.id.empty()) entry->response.id = providers::unnamedAnswerId(ex.ctx.id);
      if (entry->response.model.empty()) entry->response.model = ex.route.upstream_model;
    }
    entry->stored_at_ms = unixNowMs();
    recorded_ = std::make_shared<const cache::Entry>(std::move(*entry));
  }

  static boost::asio::awaitable<void> answerHit(Exchange& ex, std::shared_ptr<const cache::Entry>& hit) {
    std::shared_ptr<const cache::Entry> sealed = hit;
    const auto& plan = ex.answer;
    if (plan.restore_cipher)
      hit = restoredEntry(hit, *plan.restore_cipher, *plan.restore_stats, plan.restore_memo.get());
    ex.answer.headers.emplace_back("x-sluice-cache", "hit");
    // A hit costs nothing upstream: the limits get their reservations back, and the metrics
    // count what it would have cost.
    co_await ex.settle.releaseAll();
    if (const auto& price = ex.settle.price) {
      const auto& u = hit->response.usage;
      const double saved = pipeline::PriceTable::cost(*price, {.input = u.input,
                                                               .output = u.output,
                                                               .cached = u.cached,
                                                               .cache_write = u.cache_creation,
                                                               .reasoning = u.reasoning});
      metrics::registry().safety.cache_saved_micro_usd.fetch_add(static_cast<std::uint64_t>(saved * 1e6),
                                                                 std::memory_order_relaxed);
    }
    co_await replayHit(ex, *hit, *sealed);
    if (plan.restore_stats) countRestored(*plan.restore_stats);
  }

  std::optional<cache::CacheKey> key_;  // set: this request's answer is written under it
  std::chrono::milliseconds ttl_{0};
  std::size_t max_entry_ = cache::kDefaultMaxEntryBytes;
  providers::Format format_ = providers::Format::OpenAIChat;  // of the upstream's bytes
  int status_ = 0;
  std::unique_ptr<cache::Recorder> recorder_;     // a stream's, per attempt
  std::shared_ptr<const cache::Entry> recorded_;  // the entry made from this answer
};

}  // namespace

std::unique_ptr<const StageConfig> makeCacheStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<CacheStage>>("cache");
}

}  // namespace sluice::gateway
