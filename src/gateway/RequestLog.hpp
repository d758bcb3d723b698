// What a finished request leaves behind: its row for the request log (the store) and its line
// for the access log (stdout, JSON), both from the record the stages filled in.
#pragma once
#include <string>

#include "gateway/Exchange.hpp"
#include "http/Server.hpp"
#include "store/Store.hpp"

namespace sluice::gateway {

// The request-log row. Takes the request's strings (they are not needed after this): no copies
// per request.
store::LogRecord logRecord(const http::Request& req, RequestContext& ctx, RequestRecord& rec);

// The access-log line: one JSON object, hand-built in one buffer (this runs for every request).
std::string accessLogLine(const http::Request& req, const RequestContext& ctx, const RequestRecord& rec);

}  // namespace sluice::gateway
