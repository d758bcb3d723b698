#include "providers/Translate.hpp"

#include "providers/CodecUtil.hpp"
#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/openai/ChatCodec.hpp"

namespace sluice::providers {

namespace {

std::optional<ApiError> decodeRequest(Format f, std::string_view body, Request& req) {
  switch (f) {
    case Format::OpenAIChat:
      return openai::decodeChatRequest(body, req);
    case Format::AnthropicMessages:
      return anthropic::decodeMessagesRequest(body, req);
  }
  return ApiError::invalid("", "unknown client format");
}

std::optional<ApiError> encodeRequest(Format f, const Request& req, const EncodeOptions& opts, std::string& out) {
  switch (f) {
    case Format::OpenAIChat:
      return openai::encodeChatRequest(req, opts, out);
    case Format::AnthropicMessages:
      return anthropic::encodeMessagesRequest(req, opts, out);
  }
  return ApiError::invalid("", "unknown upstream format");
}

}  // namespace

std::optional<TranslateError> translateRequest(Format client, Format upstream, std::string_view body,
                                               std::string& upstream_body, const TranslateContext& ctx,
                                               RequestInfo* info) {
  Request req;
  if (auto e = decodeRequest(client, body, req)) return e;
  if (info) {
    info->model = req.model;
    info->stream = req.stream;
    info->include_usage = req.include_usage;
  }
  EncodeOptions opts;
  opts.model = ctx.upstream_model;
  opts.openai_max_completion_tokens = ctx.openai_max_completion_tokens;
  return encodeRequest(upstream, req, opts, upstream_body);
}

std::optional<TranslateError> translateResponse(Format client, Format upstream, std::string_view upstream_body,
                                                std::string& client_body, const TranslateContext& ctx, Usage* usage) {
  Response res;
  std::optional<ApiError> err;
  switch (upstream) {
    case Format::OpenAIChat:
      err = openai::decodeChatResponse(upstream_body, res);
      break;
    case Format::AnthropicMessages:
      err = anthropic::decodeMessagesResponse(upstream_body, res);
      break;
  }
  if (err) return err;
  if (usage) *usage = res.usage;
  if (res.created == 0) res.created = ctx.created;
  switch (client) {
    case Format::OpenAIChat:
      openai::encodeChatResponse(res, client_body);
      break;
    case Format::AnthropicMessages:
      anthropic::encodeMessagesResponse(res, client_body);
      break;
  }
  return std::nullopt;
}

std::string errorBody(Format client, const ApiError& err) {
  std::string out;
  switch (client) {
    case Format::OpenAIChat:
      openai::encodeChatError(err, out);
      break;
    case Format::AnthropicMessages:
      anthropic::encodeMessagesError(err, out);
      break;
  }
  return out;
}

std::string translateError(Format client, Format upstream, int status, std::string_view upstream_body,
                           int* status_out) {
  ApiError err = upstream == Format::AnthropicMessages ? anthropic::decodeMessagesError(status, upstream_body)
                                                       : openai::decodeChatError(status, upstream_body);
  if (status_out) *status_out = status;
  return errorBody(client, err);
}

StreamTranslator::StreamTranslator(std::unique_ptr<StreamDecoder> decoder, std::unique_ptr<StreamEncoder> encoder)
    : decoder_(std::move(decoder)), encoder_(std::move(encoder)) {}

bool StreamTranslator::feed(std::string_view upstream_bytes, std::string& client_out) {
  if (overflow_) return false;
  out_ = &client_out;
  bool ok = decoder_->feed(upstream_bytes, *this);
  out_ = nullptr;
  if (!ok) overflow_ = true;
  return ok;
}

void StreamTranslator::finish(std::string& client_out) {
  if (overflow_ && !encoder_->ended()) {
    ApiError err = detail::upstreamStreamError("an upstream stream event exceeded the size limit");
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::Error;
    ev.error = &err;
    encoder_->encode(ev, client_out);
  }
  encoder_->finish(client_out);
}

void StreamTranslator::onEvent(const StreamEvent& ev) {
  if (ev.kind == StreamEvent::Kind::Start || ev.kind == StreamEvent::Kind::Usage) usage_.merge(ev.usage);
  if (ev.kind == StreamEvent::Kind::Done) saw_done_ = true;
  encoder_->encode(ev, *out_);
}

std::unique_ptr<StreamTranslator> makeStreamTranslator(Format client, Format upstream, const TranslateContext& ctx) {
  std::unique_ptr<StreamDecoder> dec =
      upstream == Format::AnthropicMessages ? anthropic::makeMessagesStreamDecoder() : openai::makeChatStreamDecoder();
  std::unique_ptr<StreamEncoder> enc;
  if (client == Format::AnthropicMessages) {
    enc = anthropic::makeMessagesStreamEncoder();
  } else {
    openai::ChatStreamOptions o;
    o.include_usage = ctx.include_usage;
    o.created = ctx.created;
    enc = openai::makeChatStreamEncoder(o);
  }
  return std::make_unique<StreamTranslator>(std::move(dec), std::move(enc));
}

}  // namespace sluice::providers
