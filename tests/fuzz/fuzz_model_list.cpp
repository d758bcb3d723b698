// Model discovery (gateway/ModelList.hpp): a provider's model-list body, untrusted. Input: [gemini
// bit] [body]. Checks: no crash; a next-page token is 1-1024 bytes; every name kept is one `serves` accepted (a model name starting
// "gpt-" or "gemini-"), has no space or quote, and the list is sorted, without repeats, bounded.
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/ModelList.hpp"
#include "routing/ModelName.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool gemini = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto serves = [](std::string_view n) {
    return routing::isModelName(n) && (n.starts_with("gpt-") || n.starts_with("gemini-"));
  };
  if (auto next = gateway::nextPageToken(gemini, body); next && (next->empty() || next->size() > 1024))
    fuzz::fail("a page token outside 1-1024 bytes", *next);
  std::string why;
  auto models = gateway::parseModelList(gemini, body, serves, why);
  if (!models) {
    if (why.empty()) fuzz::fail("a refused list without a reason");
    return 0;
  }
  if (models->size() > gateway::kMaxListedModels) fuzz::fail("more names than the bound");
  for (std::size_t i = 0; i < models->size(); ++i) {
    const std::string& m = (*models)[i];
    if (!serves(m)) fuzz::fail("a name its channel does not serve was kept", m);
    if (m.find_first_of(" \"") != std::string::npos) fuzz::fail("a name with a space or quote was kept", m);
    if (i > 0 && !((*models)[i - 1] < m)) fuzz::fail("the list is not sorted without repeats", m);
  }
  return 0;
}
