// Validation of JSON request fields for the admin API and the `sluice keys` CLI: one set of
// rules and one wording, so both refuse the same input with the same message.
// Pure functions; thread-safe.
#pragma once
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sluice::admin {

// A refused field. param() is the field's name ("allowed_models[2]" for an element), or empty
// when the request as a whole is wrong (the API answers "param": null). what() says what to fix.
class FieldError : public std::runtime_error {
 public:
  FieldError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const noexcept { return param_; }

 private:
  std::string param_;
};

// The body of a POST/PATCH: must be a JSON object.
boost::json::object parseBodyObject(std::string_view body);

// Refuses any member of `body` not in `writable`. Members in `read_only` get "NAME is read-only"
// (clients that send back what they read learn why); the rest "unknown field".
void rejectUnknownFields(const boost::json::object& body, std::initializer_list<std::string_view> writable,
                         std::initializer_list<std::string_view> read_only);

// A short description of a value for messages: "-3", "\"abc\"", "an object", "null".
std::string describeJson(const boost::json::value& v);

// A string of min..max bytes without control characters.
std::string textField(const boost::json::value& v, std::string_view param, std::size_t min, std::size_t max);
// An integer in [lo, hi] (a JSON number without a fraction).
std::int64_t integerField(const boost::json::value& v, std::string_view param, std::int64_t lo, std::int64_t hi);
// A positive integer, or null (nullopt) to remove the limit.
std::optional<std::int64_t> limitField(const boost::json::value& v, std::string_view param);
// A non-negative finite number, or null (nullopt) to remove the budget.
std::optional<double> budgetField(const boost::json::value& v, std::string_view param);
// An array of non-empty strings without control characters, returned as JSON text.
std::string nameListField(const boost::json::value& v, std::string_view param, bool allow_empty);

// The protect-stage overrides a virtual key or a store channel keeps in its settings object:
// "screening" ("off", "log", "warn", "block"), "cache" (bool), "cache_ttl_ms" (1 ms to a year);
// null removes one. Returns whether `body` named any of them. `inherits` says in messages what
// null falls back to ("the channel's and the gateway's").
bool applyProtectOverrides(boost::json::object& settings, const boost::json::object& body, std::string_view inherits);

}  // namespace sluice::admin
