#include "admin/Csv.hpp"

#include <fmt/format.h>

namespace sluice::admin {

void appendCsvText(std::string& out, std::string_view field) {
  const bool formula = !field.empty() && (field[0] == '=' || field[0] == '+' || field[0] == '-' || field[0] == '@' ||
                                          field[0] == '\t' || field[0] == '\r');
  const bool quote = formula || field.find_first_of(",\"\r\n") != std::string_view::npos;
  if (!quote) {
    out += field;
    return;
  }
  out += '"';
  if (formula) out += '\'';
  for (const char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::string csvUsd(double usd) {
  std::string s = fmt::format("{:.10f}", usd);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

}  // namespace sluice::admin
