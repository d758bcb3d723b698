// Multipart form bodies (gateway/Multipart.hpp): a client's content type and body, untrusted.
// Input: [content type] '\n' [body]. Checks: no crash; a boundary is 1-70 characters; every part
// given is a view inside the body; the field lookup agrees with the walk (the first plain part of
// that name, within the size bound) and never returns a file's bytes.
#include <string>

#include "FuzzUtil.hpp"
#include "gateway/Multipart.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string_view type = in.substr(0, nl);
  const std::string_view body = in.substr(nl + 1);
  auto boundary = gateway::multipartBoundary(type);
  if (!boundary) return 0;
  if (boundary->empty() || boundary->size() > 70) fuzz::fail("a boundary outside 1-70 characters", *boundary);
  std::optional<std::string> first;
  bool seen = false;
  gateway::forEachPart(body, *boundary, [&](const gateway::FormPart& p) {
    if (p.data.data() < body.data() || p.data.data() + p.data.size() > body.data() + body.size())
      fuzz::fail("a part outside the body");
    if (!seen && p.name == "model" && !p.filename) {
      seen = true;
      if (p.data.size() <= 256) first = std::string(p.data);
    }
    return true;
  });
  auto field = gateway::multipartField(body, *boundary, "model");
  if (field != first) fuzz::fail("the field lookup and the walk disagree", field.value_or("(none)"));
  return 0;
}
