// ApiError: an error answer of the mock, before it is rendered in a provider's wire format.
// Empty `param` / `code` render as null.
#pragma once
#include <string>

namespace sluice::mock {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;
  std::string code;
};

}  // namespace sluice::mock
