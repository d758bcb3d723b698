#include "providers/Translate.hpp"

#include <algorithm>

#include "providers/CodecUtil.hpp"
#include "providers/anthropic/MessagesCodec.hpp"
#include "providers/bedrock/ConverseCodec.hpp"
#include "providers/gemini/GenerateCodec.hpp"
#include "providers/openai/ChatCodec.hpp"
#include "providers/openai/ResponsesCodec.hpp"
#include "providers/openai/ResponsesUpstream.hpp"

namespace sluice::providers {

namespace {

std::optional<ApiError> decodeRequest(Format f, std::string_view body, Request& req) {
  switch (f) {
    case Format::OpenAIChat:
      return openai::decodeChatRequest(body, req);
    case Format::AnthropicMessages:
      return anthropic::decodeMessagesRequest(body, req);
    case Format::GeminiGenerate:
      return gemini::decodeGenerateRequest(body, req);
    case Format::OpenAIResponses:
      return openai::decodeResponsesRequest(body, req);
    case Format::BedrockConverse:
      break;  // an upstream format only
  }
  return ApiError::invalid("", "unknown client format");
}

std::optional<ApiError> encodeRequest(Format f, const Request& req, const EncodeOptions& opts, std::string& out) {
  switch (f) {
    case Format::OpenAIChat:
      return openai::encodeChatRequest(req, opts, out);
    case Format::AnthropicMessages:
      return anthropic::encodeMessagesRequest(req, opts, out);
    case Format::GeminiGenerate:
      return gemini::encodeGenerateRequest(req, opts, out);
    case Format::BedrockConverse:
      return bedrock::encodeConverseRequest(req, opts, out);
    case Format::OpenAIResponses:
      return openai::encodeResponsesRequest(req, opts, out);
  }
  return ApiError::invalid("", "unknown upstream format");
}

void applyResume(Request& req, const Resume& r) {
  std::string_view text = r.text;
  if (r.prefill) {
    text = prefillText(text);
    if (req.reasoning_budget && *req.reasoning_budget > 0) req.reasoning_budget.reset();
  }
  if (!text.empty()) {
    // The client's own trailing assistant turn (its prefill) is the start of the answer.
    if (!req.messages.empty() && req.messages.back().role == Role::Assistant && !req.messages.back().parts.empty() &&
        req.messages.back().parts.back().kind == Part::Kind::Text) {
      req.messages.back().parts.back().text.append(text);
    } else {
      Message m;
      m.role = Role::Assistant;
      m.parts.push_back(Part::makeText(std::string(text)));
      req.messages.push_back(std::move(m));
    }
    if (!r.prefill) {
      Message m;
      m.role = Role::User;
      m.parts.push_back(Part::makeText(std::string(kResumeInstruction)));
      req.messages.push_back(std::move(m));
    }
  }
  if (req.max_tokens && r.output_so_far > 0) req.max_tokens = std::max<std::int64_t>(1, *req.max_tokens - r.output_so_far);
}

}  // namespace

// The gateway's request id, so a client's answer id and the request log's id are one, and a
// translation does not depend on chance.
std::string unnamedAnswerId(std::string_view request_id) {
  return "msg_bdrk_" + (request_id.empty() ? std::string("0") : std::string(request_id));
}

namespace {
std::string answerId(const TranslateContext& ctx) {
  return unnamedAnswerId(ctx.answer_id);
}
}  // namespace

std::string_view prefillText(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

std::optional<TranslateError> translateRequest(Format client, Format upstream, std::string_view body,
                                               std::string& upstream_body, const TranslateContext& ctx,
                                               RequestInfo* info) {
  Request req;
  std::shared_ptr<openai::ResponsesEcho> echo;
  if (client == Format::OpenAIResponses) {
    echo = std::make_shared<openai::ResponsesEcho>();
    if (auto e = openai::decodeResponsesRequest(body, req, echo.get())) return e;
  } else if (auto e = decodeRequest(client, body, req)) {
    return e;
  }
  if (client == Format::GeminiGenerate) {
    req.model = ctx.client_model;
    req.stream = ctx.client_stream;
  }
  if (ctx.resume) applyResume(req, *ctx.resume);
  if (req.model.empty() && ctx.upstream_model.empty())
    return ApiError::invalid("model", "the model is required (Gemini: /v1beta/models/{model}:generateContent)");
  if (info) {
    info->model = req.model;
    info->stream = req.stream;
    info->include_usage = req.include_usage;
    info->responses_echo = echo;
  }
  EncodeOptions opts;
  opts.model = ctx.upstream_model;
  opts.openai_max_completion_tokens = ctx.openai_max_completion_tokens;
  opts.codex = ctx.codex;
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
    case Format::GeminiGenerate:
      err = gemini::decodeGenerateResponse(upstream_body, res);
      break;
    case Format::BedrockConverse:
      err = bedrock::decodeConverseResponse(upstream_body, res);
      // Converse answers carry neither an id nor a model: named here, as the client formats want both.
      if (!err && res.model.empty()) res.model = ctx.upstream_model;
      if (!err && res.id.empty()) res.id = answerId(ctx);
      break;
    case Format::OpenAIResponses:
      if (openai::looksLikeSse(upstream_body)) {  // the Codex endpoint streams every answer
        std::string assembled;
        err = openai::assembleResponsesStream(upstream_body, assembled);
        if (!err) err = openai::decodeResponsesResponse(assembled, res);
      } else {
        err = openai::decodeResponsesResponse(upstream_body, res);
      }
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
    case Format::GeminiGenerate:
      gemini::encodeGenerateResponse(res, client_body);
      break;
    case Format::OpenAIResponses:
      openai::encodeResponsesResponse(res, client_body, ctx.responses_echo.get());
      break;
    case Format::BedrockConverse:
      return ApiError{500, ErrorKind::Api, "Bedrock Converse is not a client format", {}, {}};
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
    case Format::GeminiGenerate:
      gemini::encodeGenerateError(err, out);
      break;
    case Format::OpenAIResponses:
      openai::encodeResponsesError(err, out);
      break;
    case Format::BedrockConverse:
      openai::encodeChatError(err, out);  // never a client format; keep it total
      break;
  }
  return out;
}

std::string translateError(Format client, Format upstream, int status, std::string_view upstream_body,
                           int* status_out, std::string_view error_type) {
  ApiError err;
  switch (upstream) {
    case Format::OpenAIChat:
      err = openai::decodeChatError(status, upstream_body);
      break;
    case Format::AnthropicMessages:
      err = anthropic::decodeMessagesError(status, upstream_body);
      break;
    case Format::GeminiGenerate:
      err = gemini::decodeGenerateError(status, upstream_body);
      break;
    case Format::OpenAIResponses:
      err = openai::decodeResponsesError(status, upstream_body);
      break;
    case Format::BedrockConverse:
      err = bedrock::decodeConverseError(status, upstream_body, error_type);
      break;
  }
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

void StreamTranslator::nameStart(std::string id, std::string model) {
  start_id_ = std::move(id);
  start_model_ = std::move(model);
}

void StreamTranslator::onEvent(const StreamEvent& ev) {
  if (ev.kind == StreamEvent::Kind::Start && !start_id_.empty() && ev.id.empty()) {
    StreamEvent named = ev;
    named.id = start_id_;
    if (named.model.empty()) named.model = start_model_;
    usage_.merge(named.usage);
    encoder_->encode(named, *out_);
    return;
  }
  if (ev.kind == StreamEvent::Kind::Start || ev.kind == StreamEvent::Kind::Usage) usage_.merge(ev.usage);
  if (ev.kind == StreamEvent::Kind::Done) saw_done_ = true;
  encoder_->encode(ev, *out_);
}

std::unique_ptr<StreamTranslator> makeStreamTranslator(Format client, Format upstream, const TranslateContext& ctx) {
  std::unique_ptr<StreamDecoder> dec;
  switch (upstream) {
    case Format::OpenAIChat:
      dec = openai::makeChatStreamDecoder();
      break;
    case Format::AnthropicMessages:
      dec = anthropic::makeMessagesStreamDecoder();
      break;
    case Format::GeminiGenerate:
      dec = gemini::makeGenerateStreamDecoder();
      break;
    case Format::BedrockConverse:
      dec = bedrock::makeConverseStreamDecoder();
      break;
    case Format::OpenAIResponses:
      dec = openai::makeResponsesStreamDecoder();
      break;
  }
  std::unique_ptr<StreamEncoder> enc;
  switch (client) {
    case Format::OpenAIChat: {
      openai::ChatStreamOptions o;
      o.include_usage = ctx.include_usage;
      o.created = ctx.created;
      enc = openai::makeChatStreamEncoder(o);
      break;
    }
    case Format::AnthropicMessages:
      enc = anthropic::makeMessagesStreamEncoder();
      break;
    case Format::GeminiGenerate: {
      gemini::GenerateStreamOptions o;
      o.json_array = ctx.gemini_json_array;
      enc = gemini::makeGenerateStreamEncoder(o);
      break;
    }
    case Format::OpenAIResponses: {
      openai::ResponsesStreamOptions o;
      o.created = ctx.created;
      o.echo = ctx.responses_echo;
      enc = openai::makeResponsesStreamEncoder(std::move(o));
      break;
    }
    case Format::BedrockConverse:
      enc = openai::makeChatStreamEncoder({});  // never a client format; keep it total
      break;
  }
  if (ctx.wrap_encoder) enc = ctx.wrap_encoder(std::move(enc));
  auto t = std::make_unique<StreamTranslator>(std::move(dec), std::move(enc));
  // ConverseStream's messageStart names neither the answer nor the model: the client formats want both.
  if (upstream == Format::BedrockConverse) t->nameStart(answerId(ctx), ctx.upstream_model);
  return t;
}

}  // namespace sluice::providers
