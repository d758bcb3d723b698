// Whole-response and error translation (providers/Translate.hpp translateResponse,
// translateError) for every (client, upstream) format pair. Input: [client | upstream << 4]
// [status byte] [upstream body]. Checks: no crash; whatever the upstream sent, the client gets
// JSON; translateError keeps the upstream status.
#include <string>

#include "FuzzUtil.hpp"
#include "providers/Translate.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto client = fuzz::formatAt(data[0] & 0x0F);
  const auto upstream = fuzz::formatAt(data[0] >> 4);
  static constexpr int kStatuses[] = {400, 401, 402, 403, 404, 408, 413, 422, 429, 499,
                                      500, 501, 502, 503, 504, 529, 200, 0,   -1,  999};
  const int status = data[1] < 20 ? kStatuses[data[1]] : 300 + data[1];
  providers::TranslateContext ctx;
  ctx.created = 1700000000;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::string out;
  providers::Usage usage;
  if (auto err = providers::translateResponse(client, upstream, body, out, ctx, &usage)) {
    std::string eb = providers::errorBody(client, *err);
    if (!fuzz::isJson(eb)) fuzz::fail("errorBody is not JSON", eb);
  } else if (!fuzz::isJson(out)) {
    fuzz::fail("translated response is not JSON", out);
  }

  int status_out = 0;
  std::string eb = providers::translateError(client, upstream, status, body, &status_out);
  if (!fuzz::isJson(eb)) fuzz::fail("translated error is not JSON", eb);
  if (status_out != status) fuzz::fail("translateError changed the status");
  return 0;
}
