// sluice: the command line. Subcommands: serve (default), mock, check, keys, version.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>
#include <vector>

#include "admin/KeysCli.hpp"
#include "config/Config.hpp"
#include "gateway/Gateway.hpp"
#include "guard/ScreenCli.hpp"
#include "mock/MockServer.hpp"
#include "redact/RedactCli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Sluice: a self-hosted LLM gateway"};
  app.require_subcommand(0, 1);

  std::string serveConfig;
  auto* serve = app.add_subcommand("serve", "Run the gateway (the default subcommand)");
  serve->add_option("-c,--config", serveConfig, "YAML config file (default: the embedded demo config)");
  // `sluice -c FILE` without a subcommand means serve.
  app.add_option("-c,--config", serveConfig, "YAML config file for serve");

  sluice::mock::MockOptions mockOpts;
  auto* mock = app.add_subcommand("mock", "Run the mock LLM provider");
  mock->add_option("--listen", mockOpts.listen, "HOST:PORT to listen on")->capture_default_str();
  mock->add_option("--workers", mockOpts.workers, "worker threads")->capture_default_str();
  mock->add_option("--ttfb-ms", mockOpts.ttfb_ms, "delay before the response starts")->capture_default_str();
  mock->add_option("--chunks", mockOpts.chunks, "content chunks per streamed answer")->capture_default_str();
  mock->add_option("--chunk-interval-ms", mockOpts.chunk_interval_ms, "delay between chunks")->capture_default_str();
  mock->add_option("--fail-rate", mockOpts.fail_rate, "probability of a failure response (0..1)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  mock->add_option("--fail-status", mockOpts.fail_status, "HTTP status of a failure")->capture_default_str();
  mock->add_option("--reset-after", mockOpts.reset_after, "break the connection after N chunks (-1: never)")
      ->capture_default_str();
  mock->add_flag("--echo-key", mockOpts.echo_key, "failure messages quote the API key the request carried");
  mock->add_option("--error-event-rate", mockOpts.error_event_rate,
                   "probability a stream carries an in-band error event after its 200 (0..1)")
      ->capture_default_str();
  mock->add_option("--error-event-after", mockOpts.error_event_after, "content chunks before that error event")
      ->capture_default_str();
  mock->add_option("--stall-after", mockOpts.stall_after,
                   "a stream stops sending after N chunks and holds the connection (-1: never)")
      ->capture_default_str();
  mock->add_option("--stall-rate", mockOpts.stall_rate, "probability a stream stalls at --stall-after (0..1)")
      ->capture_default_str();
  mock->add_option("--slow-rate", mockOpts.slow_rate, "probability the first byte waits --slow-ms (0..1)")
      ->capture_default_str();
  mock->add_option("--slow-ms", mockOpts.slow_ms, "the first-byte delay of a slowed answer")->capture_default_str();
  mock->add_option("--aws-key", mockOpts.aws_keys,
                   "Bedrock: an AWS key ACCESS_KEY_ID:SECRET[:SESSION_TOKEN] whose SigV4 signatures verify (repeatable; "
                   "default: the built-in test key)");
  mock->add_option("--google-sa", mockOpts.google_accounts,
                   "Vertex AI: a service-account JSON file whose RS256 token assertions POST /token accepts (repeatable)");
  mock->add_option("--entra-client", mockOpts.entra_clients,
                   "Entra ID: a CLIENT_ID:SECRET that POST /{tenant}/oauth2/v2.0/token accepts (repeatable; default: "
                   "mock-client:mock-secret)");
  mock->add_option("--token-lifetime-s", mockOpts.token_lifetime_s, "lifetime of the access tokens the mock issues")
      ->capture_default_str();

  std::string checkConfig;
  auto* check = app.add_subcommand("check", "Validate a config file");
  check->add_option("-c,--config,file", checkConfig, "YAML config file")->required();

  // keys: works on the store directly; a running gateway picks changes up within a second.
  sluice::admin::KeysCommand keysCmd;
  std::map<std::string, std::string> keyFlagValues;
  std::vector<CLI::App*> keysSubs;
  auto* keys = app.add_subcommand("keys", "Manage virtual keys in the store (no running gateway needed)");
  keys->require_subcommand(1);
  for (const auto& [name, help, takesId, takesFlags] :
       {std::tuple{"create", "Create a key and print its secret (shown once)", false, true},
        std::tuple{"list", "List every key", false, false},
        std::tuple{"show", "Show one key", true, false},
        std::tuple{"update", "Change a key's name, limits, budgets, expiry or metadata", true, true},
        std::tuple{"revoke", "Revoke a key at once", true, false},
        std::tuple{"delete", "Delete a key", true, false}}) {
    auto* sub = keys->add_subcommand(name, help);
    sub->add_option("-c,--config", keysCmd.config_path,
                    "YAML config file whose store.url to use (default: sqlite://./sluice.db)");
    sub->add_flag("--json", keysCmd.json, "machine-readable output");
    if (takesId) sub->add_option("id", keysCmd.id, "virtual key id")->required();
    if (takesFlags) {
      for (const auto& f : sluice::admin::kKeyFlags)
        sub->add_option("--" + std::string(f.name), keyFlagValues[std::string(f.name)], std::string(f.help));
    }
    keysSubs.push_back(sub);
  }

  bool redactExplain = false;
  auto* redact = app.add_subcommand("redact", "Show what the built-in redaction rules find (JSONL on stdin)");
  redact->add_flag("--explain", redactExplain, "for each {\"text\": ...} line, print the matches as JSON")->required();

  // screen: the prompt-injection detector on JSONL from stdin (src/guard/ScreenCli.hpp).
  sluice::guard::ScreenCliOptions screenOpts;
  double screenThreshold = 0.0;
  auto* screen = app.add_subcommand("screen", "Score JSONL lines {\"text\": ...} from stdin for prompt injection");
  auto* screenThresholdOpt = screen->add_option("--threshold", screenThreshold,
                                                "injection at score >= this (default: the model's tuned threshold)")
                                 ->check(CLI::Range(0.0, 1.0));
  screen->add_option("--model", screenOpts.model_path, "model file (default: the built-in model)");
  bool screenExplain = false;
  std::size_t screenTop = 10;
  screen->add_flag("--explain", screenExplain,
                   "add to each line the features that drove the score (their contribution to the logit)");
  screen->add_option("--top", screenTop, "with --explain: how many features (largest first)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();

  auto* version = app.add_subcommand("version", "Print the version");

  CLI11_PARSE(app, argc, argv);
  // A closed stdout (log reader gone) must not kill the gateway; sockets already use MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);

  if (*version) {
    std::cout << "sluice " << SLUICE_VERSION << "\n";
    return 0;
  }
  if (*mock) return sluice::mock::runMock(mockOpts);
  if (*screen) {
    if (screenThresholdOpt->count() > 0) screenOpts.threshold = screenThreshold;
    if (screenExplain) screenOpts.explain = screenTop;
    return sluice::guard::runScreen(screenOpts, std::cin, std::cout, std::cerr);
  }
  if (*redact) return sluice::redact::runRedactExplain(std::cin, std::cout, std::cerr);
  if (*keys) {
    for (auto* sub : keysSubs) {
      if (!*sub) continue;
      keysCmd.action = sub->get_name();
      for (const auto& f : sluice::admin::kKeyFlags) {
        const std::string name(f.name);
        if (const auto* opt = sub->get_option_no_throw("--" + name); opt && opt->count() > 0)
          keysCmd.flags.emplace_back(name, keyFlagValues[name]);
      }
    }
    return sluice::admin::runKeysCommand(keysCmd, std::cout, std::cerr);
  }
  if (*check) {
    try {
      auto cfg = sluice::config::loadConfigFile(checkConfig);
      std::cout << checkConfig << ": ok (" << cfg->channels.size() << " channels)\n";
      return 0;
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
  }
  return sluice::gateway::runServe(serveConfig);
}
