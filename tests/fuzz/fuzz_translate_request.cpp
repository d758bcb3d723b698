// Request translation (providers/Translate.hpp translateRequest) for every (client, upstream)
// format pair. Input: [client | upstream << 4] [flags: 1 max_completion_tokens, 2 a model name,
// 4 no RequestInfo, 8 the Codex endpoint's rules] [request body]. Checks: no crash; a
// translated body is JSON and is accepted again as a request of the upstream's own format;
// a rejection is a 4xx rendered as JSON in the client's format.
#include <string>

#include "FuzzUtil.hpp"
#include "providers/Translate.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto client = fuzz::formatAt(data[0] & 0x0F);
  const auto upstream = fuzz::formatAt(data[0] >> 4);
  providers::TranslateContext ctx;
  ctx.openai_max_completion_tokens = data[1] & 1;
  if (data[1] & 2) ctx.upstream_model = "fuzz-upstream-model";
  ctx.codex = data[1] & 8;  // a Responses upstream that is ChatGPT's Codex endpoint
  ctx.created = 1700000000;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::string out;
  providers::RequestInfo info;
  auto err = providers::translateRequest(client, upstream, body, out, ctx, (data[1] & 4) ? nullptr : &info);
  if (err) {
    if (err->status < 400 || err->status > 499) fuzz::fail("request rejected with a non-4xx status");
    std::string eb = providers::errorBody(client, *err);
    if (!fuzz::isJson(eb)) fuzz::fail("errorBody is not JSON", eb);
    return 0;
  }
  if (!fuzz::isJson(out)) fuzz::fail("translated request is not JSON", out);
  std::string again;
  providers::TranslateContext same;
  same.created = ctx.created;
  (void)providers::translateRequest(upstream, upstream, out, again, same);
  return 0;
}
