#include "metrics/Metrics.hpp"

#include <fmt/format.h>

namespace sluice::metrics {

Registry& registry() {
  static Registry r;
  return r;
}

std::string labelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Histogram::observe(double ms) {
  std::size_t i = 0;
  while (i < kBoundsMs.size() && ms > kBoundsMs[i]) ++i;
  ++counts_[i];
  sum_ms_ += ms;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::uint64_t cum = 0;
  std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < kBoundsMs.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, kBoundsMs[i] / 1000.0, cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cum);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_ms_ / 1000.0);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
}

void Registry::record(const RequestSample& s) {
  std::lock_guard lk(mu_);
  ++requests_[{s.channel, s.model, s.status}];
  if (s.input_tokens > 0) tokens_[{s.channel, s.model, "input"}] += static_cast<std::uint64_t>(s.input_tokens);
  if (s.output_tokens > 0) tokens_[{s.channel, s.model, "output"}] += static_cast<std::uint64_t>(s.output_tokens);
  if (s.ttfb_ms >= 0) ttfb_[s.channel].observe(s.ttfb_ms);
  duration_[s.channel].observe(s.duration_ms);
}

void Registry::retry(const std::string& channel, const std::string& reason) {
  std::lock_guard lk(mu_);
  ++retries_[{channel, reason}];
}

void Registry::fallback(const std::string& from, const std::string& to) {
  std::lock_guard lk(mu_);
  ++fallbacks_[{from, to}];
}

void Registry::hedge(const std::string& channel, const char* result) {
  std::lock_guard lk(mu_);
  ++hedges_[{channel, result}];
}

void SafetyCounters::redacted(const std::string& rule, const char* action, std::uint64_t n) {
  std::lock_guard lk(mu_);
  redactions_[{rule, action}] += n;
}
void SafetyCounters::screened(const char* outcome) {
  std::lock_guard lk(mu_);
  ++screen_[outcome];
}
void SafetyCounters::guardrail(const char* verdict) {
  std::lock_guard lk(mu_);
  ++guardrail_[verdict];
}

void SafetyCounters::render(std::string& out) const {
  std::lock_guard lk(mu_);
  out += "# HELP sluice_redactions_total Values redacted from requests, by rule and action.\n";
  out += "# TYPE sluice_redactions_total counter\n";
  for (const auto& [k, v] : redactions_)
    out += fmt::format("sluice_redactions_total{{rule=\"{}\",action=\"{}\"}} {}\n", labelValue(k.first), k.second, v);
  out += "# HELP sluice_restored_tokens_total Redaction tokens put back in answers.\n";
  out += "# TYPE sluice_restored_tokens_total counter\n";
  out += fmt::format("sluice_restored_tokens_total {}\n", restored.load(std::memory_order_relaxed));
  out += "# HELP sluice_tampered_tokens_total Tokens in answers that did not open (altered or foreign); left as they were.\n";
  out += "# TYPE sluice_tampered_tokens_total counter\n";
  out += fmt::format("sluice_tampered_tokens_total {}\n", tampered.load(std::memory_order_relaxed));
  out += "# HELP sluice_screened_requests_total Requests scored by the prompt-injection screen.\n";
  out += "# TYPE sluice_screened_requests_total counter\n";
  out += fmt::format("sluice_screened_requests_total {}\n", screened_total.load(std::memory_order_relaxed));
  out += "# HELP sluice_screen_flagged_total Requests the screen flagged, by what was done.\n";
  out += "# TYPE sluice_screen_flagged_total counter\n";
  for (const auto& [k, v] : screen_) out += fmt::format("sluice_screen_flagged_total{{outcome=\"{}\"}} {}\n", k, v);
  out += "# HELP sluice_guardrail_reviews_total Guardrail webhook reviews, by verdict (failed and timeout are failures).\n";
  out += "# TYPE sluice_guardrail_reviews_total counter\n";
  for (const auto& [k, v] : guardrail_) out += fmt::format("sluice_guardrail_reviews_total{{verdict=\"{}\"}} {}\n", k, v);
  out += "# HELP sluice_cache_saved_usd_total What cache hits would have cost upstream.\n";
  out += "# TYPE sluice_cache_saved_usd_total counter\n";
  out += fmt::format("sluice_cache_saved_usd_total {:.6f}\n", static_cast<double>(cache_saved_micro_usd.load(std::memory_order_relaxed)) / 1e6);
}

std::string Registry::render(const std::function<void(std::string&)>& extra) const {
  std::string out;
  out.reserve(8192);
  {
    std::lock_guard lk(mu_);
    out += "# HELP sluice_requests_total Requests answered, by channel, model and status.\n";
    out += "# TYPE sluice_requests_total counter\n";
    for (const auto& [k, v] : requests_)
      out += fmt::format("sluice_requests_total{{channel=\"{}\",model=\"{}\",status=\"{}\"}} {}\n",
                         labelValue(std::get<0>(k)), labelValue(std::get<1>(k)), std::get<2>(k), v);
    out += "# HELP sluice_tokens_total Tokens reported by upstreams.\n# TYPE sluice_tokens_total counter\n";
    for (const auto& [k, v] : tokens_)
      out += fmt::format("sluice_tokens_total{{channel=\"{}\",model=\"{}\",type=\"{}\"}} {}\n",
                         labelValue(std::get<0>(k)), labelValue(std::get<1>(k)), std::get<2>(k), v);
    out += "# HELP sluice_retries_total Attempts that failed over to another key or channel.\n";
    out += "# TYPE sluice_retries_total counter\n";
    for (const auto& [k, v] : retries_)
      out += fmt::format("sluice_retries_total{{channel=\"{}\",reason=\"{}\"}} {}\n", labelValue(k.first),
                         labelValue(k.second), v);
    out += "# HELP sluice_fallbacks_total Requests that moved on to a fallback model (routing.fallbacks).\n";
    out += "# TYPE sluice_fallbacks_total counter\n";
    for (const auto& [k, v] : fallbacks_)
      out += fmt::format("sluice_fallbacks_total{{from=\"{}\",to=\"{}\"}} {}\n", labelValue(k.first),
                         labelValue(k.second), v);
    out += "# HELP sluice_hedges_total Hedged attempts (routing.hedge_after) by channel and result.\n";
    out += "# TYPE sluice_hedges_total counter\n";
    for (const auto& [k, v] : hedges_)
      out += fmt::format("sluice_hedges_total{{channel=\"{}\",result=\"{}\"}} {}\n", labelValue(k.first),
                         labelValue(k.second), v);
    out += "# HELP sluice_ttfb_seconds Time to the first body byte sent to the client.\n";
    out += "# TYPE sluice_ttfb_seconds histogram\n";
    for (const auto& [ch, h] : ttfb_) h.render(out, "sluice_ttfb_seconds", fmt::format("channel=\"{}\"", labelValue(ch)));
    out += "# HELP sluice_request_duration_seconds Time from request to the last byte.\n";
    out += "# TYPE sluice_request_duration_seconds histogram\n";
    for (const auto& [ch, h] : duration_)
      h.render(out, "sluice_request_duration_seconds", fmt::format("channel=\"{}\"", labelValue(ch)));
  }
  out += "# HELP sluice_active_requests Requests in flight.\n# TYPE sluice_active_requests gauge\n";
  out += fmt::format("sluice_active_requests {}\n", active_requests.load());
  out += "# HELP sluice_active_streams Streams being relayed.\n# TYPE sluice_active_streams gauge\n";
  out += fmt::format("sluice_active_streams {}\n", active_streams.load());
  out += "# HELP sluice_config_reloads_total Config reloads by result.\n# TYPE sluice_config_reloads_total counter\n";
  out += fmt::format("sluice_config_reloads_total{{result=\"ok\"}} {}\n", reloads_ok.load());
  out += fmt::format("sluice_config_reloads_total{{result=\"failed\"}} {}\n", reloads_failed.load());
  out += "# HELP sluice_log_dropped_total Log records dropped because the queue was full.\n";
  out += "# TYPE sluice_log_dropped_total counter\n";
  out += fmt::format("sluice_log_dropped_total {}\n", log_dropped_.load());
  safety.render(out);
  if (extra) extra(out);
  return out;
}

}  // namespace sluice::metrics
