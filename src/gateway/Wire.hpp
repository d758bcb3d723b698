// Wire formats a client speaks and a channel serves, and the gateway's own errors in each.
// Pure functions; thread-safe.
#pragma once
#include <string>
#include <string_view>

#include "config/Config.hpp"
#include "http/Server.hpp"

namespace sluice::gateway {

// Bedrock is a channel's wire only (AWS Converse, signed): no client speaks it.
enum class Wire { OpenAI, Anthropic, Gemini, Bedrock };

const char* wireName(Wire w);
// The format a channel's upstream speaks (azure and openai-compatible are OpenAI's).
// A vertex channel speaks Anthropic Messages for Claude models and Gemini for the rest: its wire
// depends on the model it sends upstream (`upstream_model`; other types ignore it).
Wire channelWire(config::ChannelType t, std::string_view upstream_model = {});

// An error the gateway itself answers, in the caller's format:
//  OpenAI    {"error":{"message","type","param":null,"code"}}
//  Anthropic {"type":"error","error":{"type","message"}}
//  Gemini    {"error":{"code","message","status"}}
// `type` is OpenAI's error type; the other formats derive theirs from the status.
http::Response errorResponse(Wire w, int status, std::string_view type, std::string_view code,
                             std::string_view message);
// The event that ends a stream which broke after its first byte, in the caller's format; a
// Responses client (`responses`) gets the Responses API's `error` event:
//  event: error / data: {"type":"error","code","message","param":null}
std::string streamErrorEvent(Wire w, int status, std::string_view code, std::string_view message,
                             bool responses = false);

}  // namespace sluice::gateway
