// auth: who is calling, before anything else reveals what is configured. The master key, or a
// virtual key of the snapshot's table that is neither revoked nor expired; anything else is a
// 401 in the caller's format.
#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include "core/Clock.hpp"
#include "gateway/Auth.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"
#include "pipeline/VirtualKeySecret.hpp"

namespace sluice::gateway {

namespace {

class AuthStage final : public Stage {
 public:
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    const std::string key = presentedKey(ex.req, ex.ctx.query);
    if (key.empty()) {
      http::Response reply = refusal(
          ex, "missing_api_key", "no API key: send 'Authorization: Bearer YOUR_KEY' (or x-api-key, x-goog-api-key)");
      co_await ex.r.send(std::move(reply));
      co_return Step::Answered;
    }
    const auto& master = ex.snap.cfg->auth.master_key;
    if (!master.empty() && constantTimeEquals(key, master)) co_return Step::Continue;
    const pipeline::VirtualKeyEntry* vk = nullptr;
    if (pipeline::looksLikeVirtualKey(key)) vk = ex.snap.keys->find(pipeline::hashVirtualKeySecret(key));
    std::string message;
    if (!vk) {
      message = "the API key is not valid for this gateway";
    } else if (vk->revoked) {
      message = fmt::format("the API key {}... ({}) was revoked", vk->prefix, vk->name);
    } else if (vk->expired(unixNowMs())) {
      message = fmt::format("the API key {}... ({}) expired", vk->prefix, vk->name);
    }
    if (!message.empty()) {
      http::Response reply = refusal(ex, "invalid_api_key", message);
      co_await ex.r.send(std::move(reply));
      co_return Step::Answered;
    }
    ex.caller.vk = vk;
    ex.rec.virtual_key_id = vk->id;
    co_return Step::Continue;
  }

 private:
  static http::Response refusal(Exchange& ex, std::string_view code, const std::string& message) {
    http::Response res = ex.failure(401, "invalid_request_error", code, message);
    res.set(boost::beast::http::field::www_authenticate, "Bearer");
    return res;
  }
};

}  // namespace

std::unique_ptr<const StageConfig> makeAuthStage(const Snapshot&) {
  return std::make_unique<SimpleStageConfig<AuthStage>>("auth");
}

}  // namespace sluice::gateway
