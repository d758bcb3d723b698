#include "gateway/BodyFacts.hpp"

#include <fmt/format.h>
#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <vector>

#include "core/JsonText.hpp"
#include "core/ThreadScratch.hpp"

namespace sluice::gateway {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxSpareArenas = 8;

std::vector<std::unique_ptr<unsigned char[]>>& spareArenas() {
  thread_local std::vector<std::unique_ptr<unsigned char[]>> s;
  return s;
}

// Byte offset -> "line L, column C" for JSON error messages.
std::string positionOf(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("line {}, column {} (byte {})", line, col, offset);
}

}  // namespace

ParseArena::ParseArena() {
  auto& spare = spareArenas();
  if (spare.empty()) {
    buf_.reset(new unsigned char[kBytes]);
  } else {
    buf_ = std::move(spare.back());
    spare.pop_back();
  }
}

ParseArena::~ParseArena() {
  if (auto& spare = spareArenas(); buf_ && spare.size() < kMaxSpareArenas) spare.push_back(std::move(buf_));
}

BodyFacts inspectBody(std::string_view text, const ClientCall& call, json::value* keep) {
  BodyFacts f;
  auto bad = [&](std::string code, std::string msg) {
    f.error_code = std::move(code);
    f.error = std::move(msg);
    return f;
  };
  if (text.empty())
    return bad("invalid_json", "request body is empty: send a JSON object with \"model\" and the request fields");
  struct ArenaTag;
  struct ScratchTag;
  constexpr std::size_t kArena = 16 * 1024, kScratch = 4 * 1024;
  unsigned char* const arena = threadScratch<ArenaTag, kArena>();
  unsigned char* const scratch = threadScratch<ScratchTag, kScratch>();
  json::monotonic_resource mr(arena, kArena);  // overflows to the heap for big bodies
  json::parser jp(json::storage_ptr(), jsonParseOptions(), scratch, kScratch);
  jp.reset(keep != nullptr ? keep->storage() : json::storage_ptr(&mr));
  boost::system::error_code ec;
  std::size_t used = jp.write(text.data(), text.size(), ec);
  if (isTooDeep(ec)) return bad("invalid_json", tooDeepMessage("request body"));
  if (ec)
    return bad("invalid_json",
               fmt::format("request body is not valid JSON at {}: {}", positionOf(text, used), ec.message()));
  json::value parsed = jp.release();
  json::value& body = keep != nullptr ? (*keep = std::move(parsed)) : parsed;
  if (!body.is_object()) return bad("invalid_json", "request body must be a JSON object");
  const auto& obj = body.as_object();
  auto cap = [&](const json::value* v) {
    if (v && v->is_int64() && v->as_int64() > 0)
      f.max_tokens = v->as_int64();
    else if (v && v->is_uint64())
      f.max_tokens = static_cast<std::int64_t>(std::min<std::uint64_t>(v->as_uint64(), INT64_MAX));
  };
  if (call.wire == Wire::Gemini) {
    // The model is in the path; streaming is the method.
    f.model = call.model;
    f.stream = call.op == "streamGenerateContent";
    if (const auto* gc = obj.if_contains("generationConfig"); gc && gc->is_object())
      cap(gc->as_object().if_contains("maxOutputTokens"));
    return f;
  }
  for (const char* name : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) cap(obj.if_contains(name));
  const auto* modelV = obj.if_contains("model");
  if (!modelV || !modelV->is_string() || modelV->as_string().empty())
    return bad("missing_model", call.wire == Wire::Anthropic
                                    ? "\"model\" is required and must be a non-empty string, e.g. \"claude-sonnet-4-5\""
                                    : "\"model\" is required and must be a non-empty string, e.g. \"gpt-4o-mini\"");
  f.model = std::string(modelV->as_string());
  if (const auto* s = obj.if_contains("stream")) {
    if (!s->is_bool() && !s->is_null()) return bad("invalid_type", "\"stream\" must be true or false");
    f.stream = s->is_bool() && s->as_bool();
  }
  if (const auto* so = obj.if_contains("stream_options")) {
    f.has_stream_options = true;
    if (so->is_object())
      if (const auto* iu = so->as_object().if_contains("include_usage"); iu && iu->is_bool())
        f.asked_usage = iu->as_bool();
  }
  return f;
}

std::string rewriteBody(std::string_view text, const BodyFacts& facts, const std::string* new_model,
                        bool inject_usage) {
  if (!new_model && inject_usage && !facts.has_stream_options) {
    auto brace = text.find('{');
    static constexpr std::string_view kAdd = "\"stream_options\":{\"include_usage\":true},";
    std::string out;
    out.reserve(text.size() + kAdd.size());
    out.append(text.substr(0, brace + 1)).append(kAdd).append(text.substr(brace + 1));
    return out;
  }
  // inspectBody parsed the same text with the same limit: this parse does not fail.
  boost::system::error_code ec;
  json::value body = sluice::parseJson(text, ec);
  auto& obj = body.as_object();
  if (new_model) obj["model"] = *new_model;
  if (inject_usage) {
    auto& so = obj["stream_options"];
    if (!so.is_object()) so = json::object{};
    so.as_object()["include_usage"] = true;
  }
  return json::serialize(body);
}

}  // namespace sluice::gateway
