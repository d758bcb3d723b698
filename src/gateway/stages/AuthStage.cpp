// auth: who is calling, before anything else reveals what is configured. The master key, or a
// virtual key of the snapshot's table that is neither revoked nor expired; anything else is a
// 401 in the caller's format.
#include <boost/beast/http/field.hpp>

#include "gateway/Auth.hpp"
#include "gateway/Exchange.hpp"
#include "gateway/Snapshot.hpp"
#include "gateway/stages/Stages.hpp"

namespace sluice::gateway {

namespace {

class AuthStage final : public Stage {
 public:
  static bool applies(const Exchange&) { return true; }

  boost::asio::awaitable<Step> onRequest(Exchange& ex) override {
    KeyCheck check = checkKey(ex.snap, presentedKey(ex.req, ex.ctx.query));
    if (!check.ok()) {
      http::Response reply = refusal(ex, check.code, check.message);
      co_await ex.r.send(std::move(reply));
      co_return Step::Answered;
    }
    ex.caller.vk = check.vk;
    if (check.vk) ex.rec.virtual_key_id = check.vk->id;
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
