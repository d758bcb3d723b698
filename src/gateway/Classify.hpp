// Which API a request path belongs to (OpenAI's, Anthropic's or Gemini's, and which operation):
// it decides the caller's error format from there on.
#pragma once
#include <string>
#include <string_view>

#include "gateway/Exchange.hpp"
#include "http/Server.hpp"

namespace sluice::gateway {

// Maps a path to the API it belongs to. False: no such endpoint (call.wire still says which
// format the 404 should take).
bool classify(const std::string& path, const http::Request& req, ClientCall& call);

// A file or batch id that may go into an upstream path (letters, digits, '-', '_'; 1-128 bytes).
bool validObjectId(std::string_view id);

}  // namespace sluice::gateway
