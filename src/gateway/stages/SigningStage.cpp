// signing: AWS SigV4 for each attempt on a bedrock channel. The signature covers the request
// target, the Host, the date and the body this attempt sends, so it is made per attempt, with the
// attempt's own key (a retry on another key is signed with that key; a failover to a channel of
// another type is not signed at all), and after every other stage's onAttempt (the chain runs
// them in order and this stage is the last before the relay): whatever a stage rewrote is what
// gets signed. The secret never leaves this function: only the Authorization header's signature,
// the access key id and the session token (which AWS wants as a header) go on the wire.
// It also puts the Bearer access token on each attempt of a vertex key (a service account's) and
// of an azure channel's Entra ID key (gateway/CloudTokens.hpp): a key whose token cannot be had
// fails that attempt as a bad key would (its health says why), and the next candidate is tried.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "cloud/SigV4.hpp"
#include "gateway/CloudTokens.hpp"
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

  boost::asio::awaitable<void> onAttempt(Exchange& ex, UpstreamAttempt& a) override {
    const routing::Channel& ch = *a.pick.channel;
    if (takesCloudToken(ch.cfg, a.pick.key->secret)) {
      // The token request waits no longer than a first byte would.
      const auto& t = ex.snap.cfg->routing.timeouts;
      const auto timeout = std::min<std::chrono::milliseconds>(t.connect + t.first_byte, t.total);
      CloudToken tok;
      if (ch.cfg.type == config::ChannelType::Vertex)
        tok = co_await CloudTokens::instance().vertex(ex.svc.pool, a.pick.key->secret, timeout);
      else
        tok = co_await CloudTokens::instance().entra(ex.svc.pool, ch.cfg, timeout);
      if (!tok.ok()) {
        a.fail_status = tok.refused ? 401 : 503;
        a.fail_disables = tok.refused;
        a.why = fmt::format("no access token for key {}: {}", a.pick.key->id, tok.error);
        co_return;
      }
      a.header_lines.append("Authorization: Bearer ").append(tok.token).append("\r\n");
      a.bearer = std::move(tok.token);
      co_return;
    }
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
  SigningStageConfig(bool any_bedrock, bool any_token) : any_bedrock_(any_bedrock), any_token_(any_token) {}
  std::string_view name() const override { return "signing"; }
  // Started for a chat-like request when some channel is a bedrock one, for any request when
  // some channel takes access tokens (an Entra azure channel relays embeddings, files... too; a
  // vertex one Gemini's countTokens): a fallback model's candidates are known only on the way,
  // so not just the route's.
  Stage* start(const Exchange& ex, StageArena& arena) const override {
    return any_token_ || (any_bedrock_ && ex.call.translatable()) ? arena.make<SigningStage>() : nullptr;
  }

 private:
  bool any_bedrock_;
  bool any_token_;
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
  bool bedrock = false, token = false;
  for (const auto& c : snap.cfg->channels) {
    bedrock = bedrock || c.type == config::ChannelType::Bedrock;
    token = token || c.type == config::ChannelType::Vertex || c.entra();
  }
  return std::make_unique<SigningStageConfig>(bedrock, token);
}

}  // namespace sluice::gateway
