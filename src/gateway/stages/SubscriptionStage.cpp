// subscription: the OAuth access token of a subscription channel's key (channel `subscription`:
// claude | chatgpt), per attempt, with the headers the vendor's own CLI sends: a bearer token and
// Anthropic's OAuth beta flag (Claude Code), or the bearer token and the ChatGPT account id
// (Codex). The token comes from the SubscriptionService, which refreshes it first when it nears
// expiry. A key whose refresh token was refused is switched off here, with the reason telling
// its owner to sign in again, and the attempt moves on to another key.
#include <fmt/format.h>

#include "core/Ascii.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/SubscriptionService.hpp"
#include "gateway/stages/Stages.hpp"
#include "routing/Router.hpp"

namespace sluice::gateway {

namespace {

// Whether `lines` would stay one field line: no CR, LF or NUL.
bool oneLine(std::string_view v) {
  return v.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

class SubscriptionStage final : public Stage {
 public:
  unsigned hooks() const override { return kAttempt; }

  boost::asio::awaitable<Step> onRequest(Exchange&) override { co_return Step::Continue; }

  boost::asio::awaitable<void> onAttempt(Exchange& ex, UpstreamAttempt& a) override {
    const routing::Channel& ch = *a.pick.channel;
    if (ch.cfg.subscription.empty()) co_return;
    const routing::UpstreamKey& key = *a.pick.key;
    if (!ex.svc.subscriptions) {
      a.skip = UpstreamAttempt::Skip::Channel;
      a.why = fmt::format("channel {} is a subscription channel, which this gateway cannot serve", ch.cfg.name);
      co_return;
    }
    SubscriptionAccess acc = co_await ex.svc.subscriptions->access(ch, key, ex.svc.pool);
    if (acc.access_token.empty()) {
      a.skip = UpstreamAttempt::Skip::Key;
      a.why = fmt::format("subscription key {} of channel {}: {}", key.id, ch.cfg.name, acc.error);
      if (acc.disable) key.health->disable(acc.error);
      co_return;
    }
    std::string& h = a.header_lines;
    h.append("Authorization: Bearer ").append(acc.access_token).append("\r\n");
    a.bearer = acc.access_token;
    if (ch.cfg.subscription == "claude") {
      std::string beta(ex.req["anthropic-beta"]);
      if (!oneLine(beta)) beta.clear();
      bool has = false;
      for (std::string_view rest = beta; !rest.empty();) {
        const auto comma = rest.find(',');
        std::string_view flag = rest.substr(0, comma);
        while (!flag.empty() && flag.front() == ' ') flag.remove_prefix(1);
        while (!flag.empty() && flag.back() == ' ') flag.remove_suffix(1);
        has = has || sluice::iequals(flag, "oauth-2025-04-20");
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
      if (!has) beta = beta.empty() ? std::string("oauth-2025-04-20") : beta + ",oauth-2025-04-20";
      h.append("anthropic-beta: ").append(beta).append("\r\n");
    } else {
      h.append("chatgpt-account-id: ").append(acc.account_id).append("\r\n");
      if (ex.req["OpenAI-Beta"].empty()) h.append("OpenAI-Beta: responses=experimental\r\n");
      if (ex.req["originator"].empty()) h.append("originator: codex_cli_rs\r\n");
    }
  }
};

class SubscriptionStageConfig final : public StageConfig {
 public:
  explicit SubscriptionStageConfig(bool any) : any_(any) {}
  std::string_view name() const override { return "subscription"; }
  // Started whenever some channel is a subscription channel (a fallback's candidates are known
  // only on the way).
  Stage* start(const Exchange&, StageArena& arena) const override {
    return any_ ? arena.make<SubscriptionStage>() : nullptr;
  }

 private:
  bool any_;
};

}  // namespace

std::unique_ptr<const StageConfig> makeSubscriptionStage(const Snapshot& snap) {
  bool any = false;
  for (const auto& c : snap.cfg->channels) any = any || !c.subscription.empty();
  return std::make_unique<SubscriptionStageConfig>(any);
}

}  // namespace sluice::gateway
