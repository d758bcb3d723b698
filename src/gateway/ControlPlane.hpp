// ControlPlane: what the gateway serves from, as one immutable Snapshot: the config file's
// channels and MCP servers plus those added through the admin API, the virtual keys, the prices. It reads the
// store on a thread of its own (every 500 ms, and at once after an admin write), rebuilds the
// snapshot when something changed, and hands it to the gateway to publish to the workers. With
// Redis it also keeps upstream key health in step with the other instances, and it seeds the
// limiter's budget counters from the request log.
// Thread-safety: every public method may be called from any thread.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/Limiter.hpp"
#include "cluster/SharedHealth.hpp"
#include "config/Config.hpp"
#include "gateway/Proxy.hpp"
#include "routing/Router.hpp"
#include "store/Store.hpp"

namespace sluice::gateway {

// What the store holds of the control plane.
struct StoreState {
  std::vector<store::Channel> channels;
  std::vector<store::UpstreamKey> upstream_keys;
  std::vector<store::VirtualKey> virtual_keys;
  std::map<std::string, std::string> gateway_settings;
  std::vector<store::McpServer> mcp_servers;
  std::vector<store::Team> teams;
};

class ControlPlane {
 public:
  using Publish = std::function<void(const std::shared_ptr<const Snapshot>&)>;

  // `limiter` and `health` outlive this object.
  ControlPlane(std::shared_ptr<const config::Config> file_cfg, cluster::Limiter& limiter,
               routing::HealthRegistry& health);
  ~ControlPlane();  // stops the refresher
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The first snapshot, after one read of the store, so virtual keys and store channels work
  // from the first request (when the database answers; else they come with the first refresh).
  std::shared_ptr<const Snapshot> initial();
  // Starts the refresher; each snapshot it builds goes to `publish`.
  void start(Publish publish);
  void stop();

  std::shared_ptr<const config::Config> fileConfig() const;
  std::shared_ptr<const Snapshot> current() const;
  // A new config file: its snapshot (with the store's part) is built, becomes current and is
  // published. Throws (and changes nothing) when it cannot be built.
  std::shared_ptr<const Snapshot> applyConfig(std::shared_ptr<const config::Config> cfg);

  void poke();  // refresh soon
  // Refresh now and return once the result is published (at most a few seconds), so an admin
  // write is in force on this instance when its response leaves.
  void refreshNowAndWait();

 private:
  std::shared_ptr<const Snapshot> makeSnapshot(const std::shared_ptr<const config::Config>& fileCfg,
                                               const StoreState& st);
  void publish(const std::shared_ptr<const Snapshot>& next);  // under publish_mu_
  bool refreshFromStore(bool force);
  void seedSpend();
  void syncHealth();
  void refreshLoop();

  cluster::Limiter& limiter_;
  routing::HealthRegistry& health_;
  Publish publish_;

  // What snapshots are made of; publish_mu_ orders config reloads and store refreshes.
  mutable std::mutex publish_mu_;
  std::shared_ptr<const config::Config> file_cfg_;
  StoreState store_state_;
  std::shared_ptr<const Snapshot> current_;
  std::set<std::string> reported_problems_;
  std::shared_ptr<const pipeline::Safety> safety_;
  std::shared_ptr<const config::Config> safety_for_;  // the file config safety_ was built from

  // Refresher thread only.
  std::unique_ptr<store::Store> cp_store_;
  std::string cp_stamp_;
  std::string store_down_since_;
  cluster::SharedHealth shared_health_;
  std::map<std::string, cluster::SharedKeyState> health_synced_;  // by ref: the state last agreed

  std::mutex refresh_mu_;
  std::condition_variable refresh_cv_;
  bool refresh_stop_ = false;
  std::uint64_t poke_seq_ = 0;  // asks for a refresh
  std::uint64_t done_seq_ = 0;  // the last asked-for refresh done
  std::thread thread_;
};

}  // namespace sluice::gateway
