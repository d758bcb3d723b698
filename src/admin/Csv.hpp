// CSV (RFC 4180) for the admin API's exports. Pure functions; thread-safe.
#pragma once
#include <string>
#include <string_view>

namespace sluice::admin {

// Appends one text field: quoted when it holds a comma, quote, CR or LF (quotes doubled). A
// field that a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR; model
// names come from API clients) gets a leading apostrophe, so it is shown as text.
void appendCsvText(std::string& out, std::string_view field);

// A number of US dollars as plain decimals (no exponent), up to 10 places, trailing zeros cut.
std::string csvUsd(double usd);

}  // namespace sluice::admin
