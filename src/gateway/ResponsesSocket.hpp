// ResponsesSocket: the Responses API's WebSocket mode. A client (Codex's built-in OpenAI
// provider, the openai SDKs' responses.connect) upgrades GET /v1/responses and then sends
// {"type":"response.create", ...the fields of a POST /v1/responses body...} messages, one at a
// time; the server answers each with the same events a streamed POST would send, one JSON text
// message per event, and keeps the connection for the next.
//
// Each response.create runs through the gateway's whole request path as a POST /v1/responses
// (auth, limits, the stages, routing, failover, the access log and the store), native to
// `openai` channels and translated for every other, because the session hands it to the same
// handler an HTTP request takes. So WebSocket mode works wherever a POST does.
//
// Connection-local chaining (what makes the mode worth having): a turn may name the response
// before it in `previous_response_id` and send only its new input items, with store:false. The
// session keeps, per socket, the full input and the output items of its last few responses
// (ResponseChain) and expands such a turn into the whole conversation before it is routed, so
// it works on any channel and any provider; the upstream always gets a self-contained request.
// `generate: false` (a warm-up: Codex sends one first) is answered by the session itself with an
// empty completed response whose id later turns may chain from.
//
// Errors are {"type":"error","status":N,"error":{type,code,message,param}} messages; the socket
// stays open. An unknown previous_response_id is a 400 previous_response_not_found. Messages
// past server.max_body_bytes close the socket with 1009; a socket silent past
// server.keepalive_timeout is pinged and closed when the ping goes unanswered.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <functional>

#include "gateway/ResponseChain.hpp"
#include "http/Server.hpp"

namespace sluice::gateway {

// One POST /v1/responses through the gateway's request path.
using PostHandler = std::function<boost::asio::awaitable<void>(http::Request&, http::Responder&)>;

// Accepts the upgrade and serves the socket until the client closes it, it idles out or a read
// fails. `upgrade` was authenticated by the caller; its headers travel on every turn's request.
boost::asio::awaitable<void> serveResponsesSocket(http::Request& upgrade, http::Responder& r,
                                                  const ResponsesSocketOptions& o, PostHandler post);

}  // namespace sluice::gateway
