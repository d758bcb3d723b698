// ResponseHistory: the pure rules of stored responses (store.responses), apart from the store
// and the socket: which ids may reach a query, a request's input as items, a POST made
// self-contained from the response it continues, the input_items listing, and OpenAI's error
// bodies for them. Pure functions; thread-safe.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::gateway::history {

// Longest id the gateway looks up (OpenAI's are "resp_" + 50 hex digits).
inline constexpr std::size_t kMaxIdLength = 128;

// True for 1..kMaxIdLength letters, digits, '_' and '-': nothing else reaches a query (which is
// parameterized anyway) or an error message.
bool validId(std::string_view id);

// A request's `input` as items: a string is one user message; an array is taken as it is; an
// absent or null input is none. nullopt: any other type.
std::optional<boost::json::array> inputItems(const boost::json::value* input);

// A POST /v1/responses body as the stage found it.
struct Turn {
  bool keep = false;                      // the answer is to be stored (store absent or true)
  std::optional<std::string> previous;    // previous_response_id, when it names one
  std::optional<boost::json::array> own;  // this request's own input items (nullopt: a bad input)
};
Turn readTurn(const boost::json::object& body, bool storing);

// The whole input of a request that continues `prev` (a stored response: its input items,
// then its output items), then its own items.
boost::json::array chainedInput(const boost::json::array& prev_input, const boost::json::object& prev_response,
                                const boost::json::array& own);

// The body sent on: previous_response_id removed, `input` the whole conversation when it was
// chained, and store: true when the gateway keeps the answer (a translated answer says so).
void rewriteBody(boost::json::object& body, const boost::json::array* whole_input, bool keep);

// The response as kept: store true, and the previous_response_id the client named.
void markStored(boost::json::object& response, const std::optional<std::string>& previous);

// GET /v1/responses/{id}/input_items: the query's limit (1..100, default 20), order (asc |
// desc, default desc) and after (an item id).
struct ListQuery {
  std::size_t limit = 20;
  bool ascending = false;
  std::string after;
};
// nullopt and `error` set: a 400 naming the parameter.
std::optional<ListQuery> parseListQuery(std::string_view query, std::string& error, std::string& param);

// OpenAI's list shape over a stored response's input items. An item without an id is listed
// under one made from the response id and its position (stable: the items never change).
boost::json::object listPage(const boost::json::array& items, std::string_view response_id, const ListQuery& q);

// The error bodies, in OpenAI's shape.
std::string notFoundBody(std::string_view id);          // GET / DELETE / input_items: a 404
std::string previousNotFoundBody(std::string_view id);  // previous_response_id: a 400
std::string deletedBody(std::string_view id);           // DELETE's answer

}  // namespace sluice::gateway::history
