// Reading the few form fields the request path needs (model, stream) out of a
// multipart/form-data body (RFC 7578) without touching its files. Pure; any thread.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::gateway {

// The boundary of a `multipart/form-data; boundary=...` content type (quoted or not), or nullopt
// when the type is another or the boundary is missing or not RFC 2046's (1-70 characters of its
// set, not ending in a space).
std::optional<std::string> multipartBoundary(std::string_view content_type);

// One part of a form: its name, its filename (set for a file), its type, and its bytes (a view
// into the body).
struct FormPart {
  std::string name;
  std::optional<std::string> filename;
  std::string content_type;
  std::string_view data;
};

// Calls `fn` for each part in order until it returns false. False when the body is not
// well-formed up to its close delimiter (the parts before the fault have been given).
bool forEachPart(std::string_view body, std::string_view boundary, const std::function<bool(const FormPart&)>& fn);

// The value of the first part named `name` that is a plain field (no filename), at most
// `max_value` bytes; nullopt when there is none, it is longer, or the body is not well-formed up
// to it. Parts before it are skipped by their boundaries, never copied.
std::optional<std::string> multipartField(std::string_view body, std::string_view boundary, std::string_view name,
                                          std::size_t max_value = 256);

}  // namespace sluice::gateway
