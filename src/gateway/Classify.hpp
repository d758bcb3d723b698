// Which API a request path belongs to (OpenAI's, Anthropic's or Gemini's, and which operation):
// it decides the caller's error format from there on.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/Exchange.hpp"
#include "http/Server.hpp"

namespace sluice::gateway {

// Maps a path to the API it belongs to. False: no such endpoint (call.wire still says which
// format the 404 should take).
bool classify(const std::string& path, const http::Request& req, ClientCall& call);

// Uploads at least this large (or chunked) stream through to the provider instead of being read
// whole first: the memory a request holds stays bounded whatever it uploads.
inline constexpr std::uint64_t kStreamedBodyFrom = 1u << 20;

// Whether a request's body streams through (Server::setStreamBody): a multipart POST to the rest
// of the OpenAI API's upload endpoints, of kStreamedBodyFrom bytes or more, or chunked.
bool streamsBody(const boost::beast::http::request_header<>& head);

// A file or batch id that may go into an upstream path (letters, digits, '-', '_'; 1-128 bytes).
bool validObjectId(std::string_view id);

}  // namespace sluice::gateway
