#include "redact/RedactCli.hpp"

#include <boost/json.hpp>

#include <istream>
#include <ostream>
#include <string>

#include "redact/Rules.hpp"

namespace sluice::redact {
namespace json = boost::json;

int runRedactExplain(std::istream& in, std::ostream& out, std::ostream& err) {
  const auto rules = RuleSet::compile(builtinRules());
  std::string line;
  std::size_t lineNo = 0, bad = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    json::object result;
    boost::system::error_code ec;
    const json::value v = json::parse(line, ec);
    const json::string* text = nullptr;
    if (ec) {
      result["error"] = "line " + std::to_string(lineNo) + ": not JSON: " + ec.message();
    } else if (!v.is_object()) {
      result["error"] = "line " + std::to_string(lineNo) + ": expected a JSON object with a string \"text\"";
    } else if (const auto* t = v.as_object().if_contains("text"); !t || !t->is_string()) {
      result["error"] = "line " + std::to_string(lineNo) + ": missing string field \"text\"";
    } else {
      text = &t->get_string();
    }
    if (text) {
      json::array matches;
      for (const auto& m : rules->scan(std::string_view(text->data(), text->size()))) {
        const Rule& r = rules->rules()[m.rule];
        matches.push_back(
            json::object{{"rule", r.name}, {"start", m.start}, {"end", m.end}, {"action", actionName(r.action)}});
      }
      result["matches"] = std::move(matches);
    } else {
      ++bad;
    }
    out << json::serialize(result) << '\n';
  }
  out.flush();
  if (bad > 0) err << "sluice redact: " << bad << " of " << lineNo << " lines could not be read\n";
  return bad > 0 ? 1 : 0;
}

}  // namespace sluice::redact
