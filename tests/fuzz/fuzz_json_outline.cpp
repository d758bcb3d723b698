// The JSON outline (core/JsonOutline.hpp), read against the tree parseJson builds from the same
// bytes. Input: [depth] [text]. Checks: no crash; both accept or both refuse the text, with the
// same error; every value the outline records agrees with the tree's (kind, size, a string's
// first bytes, an integer), a repeated key answering with its last value.
#include <cstdio>
#include <cstdlib>

#include "JsonOutlineCheck.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int depth = data[0] % 8;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string differs = sluice::outline_check::compare(text, depth);
  if (!differs.empty()) {
    std::fprintf(stderr, "outline and tree differ at depth %d: %s\n", depth, differs.c_str());
    std::abort();
  }
  return 0;
}
