// The mock provider (`sluice mock`): a real HTTP server that speaks the providers' wire
// formats, with knobs for latency, chunking and failures. Used by tests, benchmarks and the
// demo; it must never be the bottleneck.
#pragma once
#include <string>
#include <vector>

#include "http/Server.hpp"

namespace sluice::mock {

struct MockOptions {
  std::string listen = "127.0.0.1:9000";
  int workers = 1;
  int ttfb_ms = 0;             // delay before the response header / first chunk
  int chunks = 8;              // content chunks in a streamed answer
  int chunk_interval_ms = 0;   // delay between chunks
  double fail_rate = 0.0;      // probability a request fails with fail_status
  int fail_status = 500;
  int reset_after = -1;        // close the connection after N chunks (mid-stream break); -1 = never
  bool echo_key = false;       // failures quote the credential received, as some providers' 401s do
  double error_event_rate = 0.0;  // probability a stream carries an in-band error event (after a 200)
  int error_event_after = 0;      // content chunks before that error event
  int stall_after = -1;           // a stream stops sending after N chunks and holds the connection; -1 = never
  double stall_rate = 1.0;        // ... this share of streams (when stall_after is set)
  double slow_rate = 0.0;         // probability the first byte waits slow_ms instead of ttfb_ms
  int slow_ms = 0;
  int shutdown_grace_ms = 2000;
  // Bedrock: the AWS keys (ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]) whose SigV4 signatures the mock
  // accepts; empty: bedrock::kDefaultAwsKey alone.
  std::vector<std::string> aws_keys;  // on SIGINT/SIGTERM: how long in-flight answers may take to finish
  // Vertex AI: service-account JSON files whose RS256 assertions the token endpoint (POST /token)
  // accepts (their public keys); the Vertex endpoints then take the bearers it issues, which live
  // token_lifetime_s seconds. Entra ID: CLIENT_ID:SECRET pairs its endpoint
  // (POST /{tenant}/oauth2/v2.0/token) accepts (default: mock-client:mock-secret).
  std::vector<std::string> google_accounts;
  std::vector<std::string> entra_clients;
  int token_lifetime_s = 3600;
};

// Serves until SIGINT/SIGTERM. Prints "sluice mock listening on HOST:PORT" once bound.
// Returns the process exit code: 0 after a clean stop, 1 when it cannot listen, 2 on bad options.
int runMock(const MockOptions& options);

// The mock's request handler alone, so another process can embed the mock: `sluice serve`
// with the embedded default config runs one in-process. Honors every option but listen/workers.
// `server` is the one it runs in: /mock/stats reports the connections it accepted.
http::Handler makeHandler(const MockOptions& options, const http::Server& server);

}  // namespace sluice::mock
