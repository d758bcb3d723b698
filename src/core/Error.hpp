// Error: the one error type of the data path. Carries where it came from, whether another
// attempt may succeed, the HTTP status to answer with, and a message a user can act on.
#pragma once
#include <string>

namespace sluice {

enum class ErrorSource { Client, Upstream, Gateway };

struct Error {
  ErrorSource source = ErrorSource::Gateway;
  int status = 500;
  bool retryable = false;
  std::string type;     // OpenAI error "type", e.g. invalid_request_error
  std::string code;     // OpenAI error "code", e.g. model_not_found
  std::string message;  // what happened and what to fix

  static Error client(int status, std::string type, std::string code, std::string message) {
    return Error{ErrorSource::Client, status, false, std::move(type), std::move(code), std::move(message)};
  }
};

}  // namespace sluice
