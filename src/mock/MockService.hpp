// MockService: the request handler of the mock provider. Routes by path to a wire format
// (OpenAI Chat/Completions/Embeddings/Responses, Anthropic Messages, Gemini), applies the knobs (latency, chunking,
// failures, broken connections) and records what it received. One instance serves every
// worker; handle() is safe to run concurrently on any number of threads.
#pragma once
#include "cloud/SigV4.hpp"
#include "http/Server.hpp"
#include "mock/MockKnobs.hpp"
#include "mock/MockServer.hpp"
#include "mock/MockStats.hpp"
#include "mock/OAuthMock.hpp"
#include "mock/ResourcesMock.hpp"
#include "mock/SseScript.hpp"
#include "mock/SubscriptionMock.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace sluice::mock {

namespace net = boost::asio;

class MockService {
 public:
  explicit MockService(MockOptions options);

  net::awaitable<void> handle(http::Request& req, http::Responder& r);

  MockStats& stats() { return stats_; }

 private:
  // One answer of any wire format: knobs, latency, injected failures, then the endpoint.
  net::awaitable<void> serve(int endpoint, int family, std::string_view model_id, http::Request& req,
                             http::Responder& r, const std::vector<std::pair<std::string, std::string>>& extra_headers);

  MockOptions options_;
  std::vector<cloud::AwsCredentials> aws_keys_;  // Bedrock: whose signatures verify
  MockStats stats_;
  std::unique_ptr<OAuthMock> oauth_;  // Google and Entra token endpoints; the bearers they issued
  ResourcesMock resources_;  // images, audio, moderations, files, batches
  SubscriptionMock subscriptions_;  // OAuth refresh endpoints and the subscription endpoints' checks
};

}  // namespace sluice::mock
