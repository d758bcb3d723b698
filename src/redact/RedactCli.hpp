// `sluice redact --explain`: shows what the built-in rule pack would redact. Reads JSON Lines
// with a string field "text" and writes one line per input line:
//   {"matches":[{"rule":"EMAIL","start":11,"end":28,"action":"encrypt"}]}
// with byte offsets into the UTF-8 text (end exclusive), or {"error":"..."} for a line that is
// not a JSON object with a string "text" (processing goes on).
#pragma once
#include <iosfwd>

namespace sluice::redact {

// Returns 0 when every line was explained, 1 when some line got an error.
int runRedactExplain(std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace sluice::redact
