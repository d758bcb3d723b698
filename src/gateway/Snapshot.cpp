#include "gateway/Snapshot.hpp"

namespace sluice::gateway {

Snapshot::Switches switchesFrom(const std::map<std::string, std::string>& rows) {
  Snapshot::Switches sw;
  auto flag = [&](const char* name) -> std::optional<bool> {
    auto it = rows.find(name);
    if (it == rows.end()) return std::nullopt;
    if (it->second == "true") return true;
    if (it->second == "false") return false;
    return std::nullopt;
  };
  sw.cache = flag("cache.enabled");
  sw.redaction = flag("redaction.enabled");
  sw.guardrail = flag("guardrail.enabled");
  if (auto it = rows.find("screening.action"); it != rows.end()) sw.screening = config::parseScreenAction(it->second);
  return sw;
}

}  // namespace sluice::gateway
