// signing: AWS SigV4 for each attempt on a bedrock channel. The signature covers the request
// target, the Host, the date and the body this attempt sends, so it is made per attempt, with the
// attempt's own key (a retry on another key is signed with that key; a failover to a channel of
// another type is not signed at all), and after every other stage's onAttempt (the chain runs
// them in order and this stage is the last before the relay): whatever a stage rewrote is what
// gets signed. The secret never leaves this function: only the Authorization header's signature,
// the access key id and the session token (which AWS wants as a header) go on the wire.
#include <fmt/format.h>

#include <ctime>

#include "cloud/SigV4.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "routing/Router.hpp"

namespace sluice::gateway {

namespace {

class SigningStage final : public Stage {
 public:
  unsigned hooks() const override { return kAttempt; }

  boost::asio::awaitable<Step> onRequest(Exchange&) override { co_return Step::Continue; }

  boost::asio::awaitable<void> onAttempt(Exchange&, UpstreamAttempt& a) override {
    const routing::Channel& ch = *a.pick.channel;
    if (ch.cfg.type != config::ChannelType::Bedrock) co_return;
    auto creds = cloud::parseAwsKey(a.pick.key->secret);
    if (!creds) {  // the config refuses such keys; a store key is checked when loaded
      a.skip = UpstreamAttempt::Skip::Key;
      a.why = fmt::format("key {} of channel {} is not an AWS key", a.pick.key->id, ch.cfg.name);
      co_return;
    }
    a.header_lines.append(signedHeaderLines(ch, *creds, a.target, a.sendBody(), std::time(nullptr)));
  }
};

class SigningStageConfig final : public StageConfig {
 public:
  explicit SigningStageConfig(bool any) : any_bedrock_(any) {}
  std::string_view name() const override { return "signing"; }
  // Started for a chat-like request when some channel is a bedrock one (a fallback model's
  // candidates are known only on the way, so not just the route's).
  Stage* start(const Exchange& ex, StageArena& arena) const override {
    return any_bedrock_ && ex.call.translatable() ? arena.make<SigningStage>() : nullptr;
  }

 private:
  bool any_bedrock_;
};

}  // namespace

std::string signedHeaderLines(const routing::Channel& ch, const cloud::AwsCredentials& creds, std::string_view target,
                              std::string_view body, long long now) {
  thread_local cloud::SigV4Signer signer;  // keeps the day's signing key: one HMAC chain a day per key
  const std::string date = cloud::amzDate(now);
  const std::string_view path = target.substr(0, target.find('?'));
  const std::string_view query =
      target.find('?') == std::string_view::npos ? std::string_view() : target.substr(target.find('?') + 1);
  cloud::SigV4Request req{.method = "POST", .path = path, .query = query, .headers = {}, .payload_sha256_hex = {}};
  req.headers.emplace_back("host", ch.endpoint.host_header);
  req.headers.emplace_back("x-amz-date", date);
  if (!creds.session_token.empty()) req.headers.emplace_back("x-amz-security-token", creds.session_token);
  const std::string payload = cloud::sha256Hex(body);
  req.payload_sha256_hex = payload;
  const cloud::SigV4Signature sig = signer.sign(req, creds, {ch.cfg.region, "bedrock", date});
  std::string lines;
  lines.reserve(256 + creds.session_token.size());
  lines.append("Authorization: ").append(sig.authorization).append("\r\n");
  lines.append("X-Amz-Date: ").append(date).append("\r\n");
  if (!creds.session_token.empty()) lines.append("X-Amz-Security-Token: ").append(creds.session_token).append("\r\n");
  return lines;
}

std::unique_ptr<const StageConfig> makeSigningStage(const Snapshot& snap) {
  bool any = false;
  for (const auto& c : snap.cfg->channels) any = any || c.type == config::ChannelType::Bedrock;
  return std::make_unique<SigningStageConfig>(any);
}

}  // namespace sluice::gateway
