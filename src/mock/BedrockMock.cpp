#include "mock/BedrockMock.hpp"
#include "core/Ascii.hpp"

#include <openssl/crypto.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "cloud/EventStream.hpp"
#include "core/JsonText.hpp"

namespace sluice::mock::bedrock {

namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

constexpr std::string_view kSignature = "EqBTCmkIBRgCIkBtb2NrIHJlYXNvbmluZyBzaWduYXR1cmU=";  // opaque, as Bedrock's
constexpr std::string_view kThought = "Let me think about this request step by step.";

const json::value* field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->value();
}

ApiError validation(std::string message) { return error(400, std::move(message)); }

std::int64_t tokensOf(std::size_t bytes) { return static_cast<std::int64_t>((bytes + 3) / 4) + 4; }

bool base64Text(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
  });
}

// A message's content blocks: their size for the token estimate, checked as Bedrock checks them.
std::optional<ApiError> readContent(const json::array& blocks, const std::string& at, std::size_t& bytes,
                                    std::string* text, std::vector<std::string>* tool_results, bool& tool_blocks) {
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const std::string bat = at + ".content." + std::to_string(j);
    const json::object* b = blocks[j].if_object();
    if (!b || b->empty()) return validation(bat + ": a content block must be an object with one member");
    if (const auto* t = field(*b, "text")) {
      if (!t->is_string()) return validation(bat + ".text: expected a string");
      bytes += t->get_string().size();
      if (text) {
        if (!text->empty()) text->push_back('\n');
        text->append(t->get_string());
      }
    } else if (const auto* img = field(*b, "image")) {
      const json::object* io = img->if_object();
      const auto* fmt = io ? field(*io, "format") : nullptr;
      const json::object* src = io ? (field(*io, "source") ? field(*io, "source")->if_object() : nullptr) : nullptr;
      const auto* data = src ? field(*src, "bytes") : nullptr;
      if (!fmt || !fmt->is_string() ||
          (fmt->get_string() != "png" && fmt->get_string() != "jpeg" && fmt->get_string() != "gif" &&
           fmt->get_string() != "webp"))
        return validation(bat + ".image.format: expected png, jpeg, gif or webp");
      if (!data || !data->is_string() || !base64Text(data->get_string()))
        return validation(bat + ".image.source.bytes: expected base64 bytes");
      bytes += data->get_string().size() / 4;  // an image counts, roughly
    } else if (const auto* tu = field(*b, "toolUse")) {
      const json::object* to = tu->if_object();
      if (!to || !field(*to, "toolUseId") || !field(*to, "name") || !field(*to, "input"))
        return validation(bat + ".toolUse: toolUseId, name and input are required");
      tool_blocks = true;
      bytes += json::serialize(*tu).size();
    } else if (const auto* tr = field(*b, "toolResult")) {
      const json::object* to = tr->if_object();
      const auto* content = to ? field(*to, "content") : nullptr;
      if (!to || !field(*to, "toolUseId") || !content || !content->is_array())
        return validation(bat + ".toolResult: toolUseId and content are required");
      tool_blocks = true;
      std::string result;
      for (const auto& c : content->get_array()) {
        if (const json::object* co = c.if_object()) {
          if (const auto* t = field(*co, "text"); t && t->is_string()) result += t->get_string();
          else if (const auto* j = field(*co, "json")) result += json::serialize(*j);
        }
      }
      bytes += result.size();
      if (tool_results) tool_results->push_back(std::move(result));
    } else if (field(*b, "reasoningContent")) {
      bytes += json::serialize(*b).size();
    } else {
      return validation(bat + ": unknown content block " + std::string(b->begin()->key()));
    }
  }
  return std::nullopt;
}

std::string frame(std::string_view event, const std::string& payload) {
  return cloud::encodeEventStreamMessage(
      {{":event-type", std::string(event)}, {":content-type", "application/json"}, {":message-type", "event"}},
      payload);
}

std::string usageJson(const ConverseRequest& req, const Generation& gen) {
  const auto out = static_cast<std::int64_t>(gen.tokensPerChoice()) + (req.thinking ? 10 : 0);
  json::object u{{"inputTokens", req.input_tokens},
                 {"outputTokens", out},
                 {"totalTokens", req.input_tokens + out + gen.extra.cache_read + gen.extra.cache_write}};
  if (gen.extra.cache_read > 0) u["cacheReadInputTokens"] = gen.extra.cache_read;
  if (gen.extra.cache_write > 0) u["cacheWriteInputTokens"] = gen.extra.cache_write;
  return json::serialize(u);
}

std::string toolUseId(const ToolCall& c) { return "tooluse_" + c.id_token; }

std::string headerValue(const http::Request& req, std::string_view name) {
  std::string out;
  for (auto it = req.find(name); it != req.end() && sluice::iequals(it->name_string(), name); ++it) {
    if (!out.empty()) out.push_back(',');
    out.append(it->value());
  }
  return out;
}

}  // namespace

std::optional<ApiError> parseConverseRequest(const json::value& body, std::string_view model, ConverseRequest& out) {
  const json::object* o = body.if_object();
  if (!o) return validation("The request body must be a JSON object");
  out.model = std::string(model);
  for (const auto& kv : *o) {
    static constexpr std::string_view kKnown[] = {"messages",
                                                  "system",
                                                  "inferenceConfig",
                                                  "toolConfig",
                                                  "additionalModelRequestFields",
                                                  "additionalModelResponseFieldPaths",
                                                  "guardrailConfig",
                                                  "promptVariables",
                                                  "requestMetadata",
                                                  "performanceConfig"};
    if (std::find(std::begin(kKnown), std::end(kKnown), kv.key()) == std::end(kKnown))
      return validation("Malformed input request: extraneous key [" + std::string(kv.key()) +
                        "] is not permitted, please reformat your input and try again.");
  }
  const auto* msgs = field(*o, "messages");
  if (!msgs || !msgs->is_array() || msgs->get_array().empty())
    return validation("A conversation must start with a user message. Try again with a conversation that starts "
                      "with a user message.");
  const auto& arr = msgs->get_array();
  std::size_t bytes = 0;
  if (const auto* sys = field(*o, "system")) {
    if (!sys->is_array()) return validation("system: expected a list of content blocks");
    bool ignored = false;
    if (auto e = readContent(sys->get_array(), "system", bytes, nullptr, nullptr, ignored)) return e;
    out.input_tokens += tokensOf(bytes);
    bytes = 0;
  }
  ToolRequest tr;
  bool tool_blocks = false;
  std::size_t last_user = arr.size();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = "messages." + std::to_string(i);
    const json::object* mo = arr[i].if_object();
    const auto* role = mo ? field(*mo, "role") : nullptr;
    if (!role || !role->is_string() || (role->get_string() != "user" && role->get_string() != "assistant"))
      return validation(at + ".role: expected user or assistant");
    if (i == 0 && role->get_string() != "user")
      return validation("A conversation must start with a user message. Try again with a conversation that starts "
                        "with a user message.");
    const auto* content = field(*mo, "content");
    if (!content || !content->is_array()) return validation(at + ".content: expected a list of content blocks");
    bytes = 0;
    if (auto e = readContent(content->get_array(), at, bytes, nullptr, nullptr, tool_blocks)) return e;
    out.input_tokens += tokensOf(bytes);
    if (role->get_string() == "user") last_user = i;
  }
  if (last_user < arr.size()) {
    std::size_t ignored = 0;
    bool tb = false;
    (void)readContent(arr[last_user].get_object().at("content").get_array(), "", ignored, &tr.last_user_text,
                      &tr.tool_results, tb);
  }
  const json::object* tc = field(*o, "toolConfig") ? field(*o, "toolConfig")->if_object() : nullptr;
  if (tool_blocks && !tc)
    return validation("The toolConfig field must be defined when using toolUse and toolResult content blocks.");
  if (tc) {
    const auto* tools = field(*tc, "tools");
    if (!tools || !tools->is_array() || tools->get_array().empty())
      return validation("toolConfig.tools: at least one tool is required");
    std::size_t i = 0;
    for (const auto& t : tools->get_array()) {
      const std::string at = "toolConfig.tools." + std::to_string(i++);
      const json::object* to = t.if_object();
      const json::object* spec = to && field(*to, "toolSpec") ? field(*to, "toolSpec")->if_object() : nullptr;
      const auto* name = spec ? field(*spec, "name") : nullptr;
      const json::object* schema =
          spec && field(*spec, "inputSchema") ? field(*spec, "inputSchema")->if_object() : nullptr;
      if (!name || !name->is_string() || !schema || !field(*schema, "json"))
        return validation(at + ".toolSpec: name and inputSchema.json are required");
      tr.tools.push_back({std::string(name->get_string()), field(*schema, "json")});
    }
    if (const auto* choice = field(*tc, "toolChoice")) {
      const json::object* co = choice->if_object();
      if (!co) return validation("toolConfig.toolChoice: expected an object");
      if (field(*co, "any")) {
        tr.mode = ToolChoiceMode::Required;
      } else if (const auto* named = field(*co, "tool")) {
        const json::object* no = named->if_object();
        const auto* n = no ? field(*no, "name") : nullptr;
        if (!n || !n->is_string()) return validation("toolConfig.toolChoice.tool.name is required");
        tr.mode = ToolChoiceMode::Named;
        tr.forced_name = std::string(n->get_string());
      }
    }
  }
  if (const auto* ic = field(*o, "inferenceConfig")) {
    const json::object* io = ic->if_object();
    if (!io) return validation("inferenceConfig: expected an object");
    if (const auto* mt = field(*io, "maxTokens")) {
      if (!mt->is_int64() || mt->get_int64() < 1) return validation("inferenceConfig.maxTokens: expected an integer >= 1");
      out.max_tokens = mt->get_int64();
    }
    if (const auto* ss = field(*io, "stopSequences")) {
      if (!ss->is_array()) return validation("inferenceConfig.stopSequences: expected a list of strings");
      for (const auto& s : ss->get_array())
        if (s.is_string()) out.stop.emplace_back(s.get_string());
    }
  }
  if (const auto* extra = field(*o, "additionalModelRequestFields"); extra && extra->is_object()) {
    if (const auto* th = field(extra->get_object(), "thinking"); th && th->is_object()) {
      const auto* type = field(th->get_object(), "type");
      out.thinking = type && type->is_string() && type->get_string() == "enabled";
    }
  }
  auto assistantText = [&](std::size_t i) -> std::string {
    if (i >= arr.size()) return {};
    const auto& mo = arr[i].get_object();
    if (mo.at("role").get_string() != "assistant") return {};
    std::string text;
    std::size_t ignored = 0;
    bool tb = false;
    (void)readContent(mo.at("content").get_array(), "", ignored, &text, nullptr, tb);
    return text;
  };
  tr.partial_answer = partialAnswer(arr.size(), last_user, tr.last_user_text, assistantText);
  out.tools = decideTools(tr);
  return std::nullopt;
}

const char* stopReason(const Generation& gen) {
  if (gen.hasToolCalls()) return "tool_use";
  if (gen.truncated_by_length) return "max_tokens";
  if (gen.stop_sequence) return "stop_sequence";
  return "end_turn";
}

std::string converseJson(const ConverseRequest& req, const Generation& gen) {
  json::array content;
  if (req.thinking)
    content.push_back(json::object{
        {"reasoningContent", json::object{{"reasoningText", json::object{{"text", kThought}, {"signature", kSignature}}}}}});
  if (gen.hasToolCalls()) {
    for (const auto& c : gen.tools->calls) {
      boost::system::error_code ec;
      json::value input = sluice::parseJson(c.arguments, ec);
      if (ec || !input.is_object()) input = json::object{};
      content.push_back(json::object{
          {"toolUse", json::object{{"toolUseId", toolUseId(c)}, {"name", c.name}, {"input", std::move(input)}}}});
    }
  } else {
    content.push_back(json::object{{"text", gen.text()}});
  }
  std::string out = "{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":";
  out += json::serialize(content);
  out += "}},\"stopReason\":\"";
  out += stopReason(gen);
  out += "\",";
  if (gen.stop_sequence && !gen.hasToolCalls()) {
    out += "\"additionalModelResponseFields\":{\"stop_sequence\":";
    appendJsonString(out, *gen.stop_sequence);
    out += "},";
  }
  out += "\"usage\":" + usageJson(req, gen) + ",\"metrics\":{\"latencyMs\":1}}";
  return out;
}

SseScript converseStream(const ConverseRequest& req, const Generation& gen) {
  SseScript s;
  s.head.push_back(frame("messageStart", R"({"role":"assistant"})"));
  std::size_t first = 0;  // the index of the answer's first block
  if (req.thinking) {
    s.head.push_back(frame("contentBlockDelta", json::serialize(json::object{
                                                    {"contentBlockIndex", 0},
                                                    {"delta", json::object{{"reasoningContent", json::object{{"text", kThought}}}}}})));
    s.head.push_back(frame("contentBlockDelta",
                           json::serialize(json::object{
                               {"contentBlockIndex", 0},
                               {"delta", json::object{{"reasoningContent", json::object{{"signature", kSignature}}}}}})));
    s.head.push_back(frame("contentBlockStop", R"({"contentBlockIndex":0})"));
    first = 1;
  }
  s.content_count = gen.pieces;
  if (gen.hasToolCalls()) {
    auto start = [first, gen](std::size_t j) {
      const ToolCall& c = gen.tools->calls[j];
      return frame("contentBlockStart",
                   json::serialize(json::object{
                       {"contentBlockIndex", first + j},
                       {"start", json::object{{"toolUse", json::object{{"toolUseId", toolUseId(c)}, {"name", c.name}}}}}}));
    };
    s.head.push_back(start(0));
    s.content = [gen, first, start](std::size_t step, std::string& out) {
      const auto [j, d] = gen.tools->steps[step];
      if (d == 0 && j > 0) {
        out += frame("contentBlockStop", json::serialize(json::object{{"contentBlockIndex", first + j - 1}}));
        out += start(j);
      }
      out += frame("contentBlockDelta",
                   json::serialize(json::object{{"contentBlockIndex", first + j},
                                                {"delta", json::object{{"toolUse", json::object{
                                                                                       {"input", gen.tools->calls[j].deltas[d]}}}}}}));
    };
    s.tail.push_back(frame("contentBlockStop",
                           json::serialize(json::object{{"contentBlockIndex", first + gen.tools->calls.size() - 1}})));
  } else {
    s.content = [gen, first](std::size_t step, std::string& out) {
      std::string payload = "{\"contentBlockIndex\":" + std::to_string(first) + ",\"delta\":{\"text\":";
      appendJsonString(payload, gen.piece(step));
      payload += "}}";
      out += frame("contentBlockDelta", payload);
    };
    s.tail.push_back(frame("contentBlockStop", "{\"contentBlockIndex\":" + std::to_string(first) + "}"));
  }
  {
    std::string stop = "{\"stopReason\":\"";
    stop += stopReason(gen);
    stop += "\"";
    if (gen.stop_sequence && !gen.hasToolCalls()) {
      stop += ",\"additionalModelResponseFields\":{\"stop_sequence\":";
      appendJsonString(stop, *gen.stop_sequence);
      stop += "}";
    }
    stop += "}";
    s.tail.push_back(frame("messageStop", stop));
  }
  s.tail.push_back(frame("metadata", "{\"usage\":" + usageJson(req, gen) + ",\"metrics\":{\"latencyMs\":1}}"));
  return s;
}

const char* exceptionName(int status) {
  switch (status) {
    case 400: return "ValidationException";
    case 403: return "AccessDeniedException";
    case 404: return "ResourceNotFoundException";
    case 408: return "ModelTimeoutException";
    case 424: return "ModelErrorException";
    case 429: return "ThrottlingException";
    case 503: return "ServiceUnavailableException";
    default: return "InternalServerException";
  }
}

ApiError error(int status, std::string message) {
  ApiError e;
  e.status = status;
  e.type = exceptionName(status);
  e.message = std::move(message);
  return e;
}

ApiError simulatedFailure(int status) {
  switch (status) {
    case 429: return error(429, "Too many requests, please wait before trying again.");
    case 403: return error(403, "You don't have access to the model with the specified model ID.");
    case 503: return error(503, "Bedrock is unable to process your request.");
    case 400: return error(400, "The provided request is not valid.");
    default: return error(status, "The server encountered an internal error while processing the request.");
  }
}

std::string errorJson(const ApiError& e) {
  std::string out = "{\"message\":";
  appendJsonString(out, e.message);
  out += "}";
  return out;
}

http::Response errorResponse(const ApiError& e, std::string_view request_id) {
  http::Response res{static_cast<bhttp::status>(e.status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-amzn-ErrorType", e.type + ":http://internal.amazon.com/coral/com.amazon.bedrock/");
  if (!request_id.empty()) res.set("x-amzn-RequestId", request_id);
  res.body() = errorJson(e);
  return res;
}

std::string exceptionFrame(int status) {
  std::string name = exceptionName(status == 503 || status == 529 ? 503 : status == 429 ? 429 : 500);
  if (status != 429 && status != 503 && status != 529) name = "ModelStreamErrorException";
  name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));  // in-stream: camelCase
  const ApiError e = simulatedFailure(status == 529 ? 503 : status);
  return cloud::encodeEventStreamMessage(
      {{":exception-type", name}, {":content-type", "application/json"}, {":message-type", "exception"}},
      errorJson(e));
}

std::optional<ApiError> verifySignature(const http::Request& req, const std::vector<cloud::AwsCredentials>& keys,
                                        long long now) {
  auto refuse = [](std::string type, std::string message) {
    ApiError e = error(403, std::move(message));
    e.type = std::move(type);
    return e;
  };
  const std::string auth = headerValue(req, "authorization");
  if (auth.empty()) return refuse("MissingAuthenticationTokenException", "Missing Authentication Token");
  static constexpr std::string_view kAlg = "AWS4-HMAC-SHA256 ";
  if (!std::string_view(auth).starts_with(kAlg))
    return refuse("IncompleteSignatureException", "Authorization header requires the AWS4-HMAC-SHA256 algorithm.");
  // Credential=ID/DAY/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex
  std::string credential, signed_headers, signature;
  std::string_view rest = std::string_view(auth).substr(kAlg.size());
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = part.substr(0, eq), value = part.substr(eq + 1);
    if (name == "Credential") credential = value;
    else if (name == "SignedHeaders") signed_headers = value;
    else if (name == "Signature") signature = value;
  }
  std::vector<std::string_view> scope;
  for (std::string_view c = credential; !c.empty();) {
    const auto slash = c.find('/');
    scope.push_back(c.substr(0, slash));
    c = slash == std::string_view::npos ? std::string_view() : c.substr(slash + 1);
  }
  if (scope.size() != 5 || signed_headers.empty() || signature.empty() || scope[4] != "aws4_request")
    return refuse("IncompleteSignatureException",
                  "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.");
  const cloud::AwsCredentials* key = nullptr;
  for (const auto& k : keys)
    if (k.access_key_id == scope[0]) key = &k;
  if (!key) return refuse("UnrecognizedClientException", "The security token included in the request is invalid.");
  const std::string token = headerValue(req, "x-amz-security-token");
  if (token != key->session_token)
    return refuse("UnrecognizedClientException", "The security token included in the request is invalid.");
  const std::string date = headerValue(req, "x-amz-date");
  if (date.size() != 16 || std::string_view(date).substr(0, 8) != scope[1])
    return refuse("InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.");
  // AWS refuses a signature made more than 5 minutes from its clock.
  std::tm tm{};
  if (!strptime(date.c_str(), "%Y%m%dT%H%M%SZ", &tm))
    return refuse("InvalidSignatureException", "X-Amz-Date is not an ISO-8601 basic date.");
  const long long when = static_cast<long long>(timegm(&tm));
  if (when < now - 300 || when > now + 300)
    return refuse("InvalidSignatureException", "Signature expired: " + date + " is now earlier or later than the allowed window.");
  const std::string_view target = req.target();
  const auto q = target.find('?');
  cloud::SigV4Request sr;
  sr.method = req.method_string();
  sr.path = target.substr(0, q);
  sr.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  for (std::string_view names = signed_headers; !names.empty();) {
    const auto semi = names.find(';');
    const std::string name(names.substr(0, semi));
    names = semi == std::string_view::npos ? std::string_view() : names.substr(semi + 1);
    sr.headers.emplace_back(name, headerValue(req, name));
  }
  if (std::find_if(sr.headers.begin(), sr.headers.end(), [](const auto& h) { return h.first == "host"; }) ==
      sr.headers.end())
    return refuse("InvalidSignatureException", "'Host' must be a signed header.");
  const std::string payload = cloud::sha256Hex(req.body());
  sr.payload_sha256_hex = payload;
  const cloud::SigV4Signature expected =
      cloud::signV4(sr, *key, {std::string(scope[2]), std::string(scope[3]), date});
  const std::string_view want = std::string_view(expected.authorization).substr(expected.authorization.rfind('=') + 1);
  if (want.size() != signature.size() || CRYPTO_memcmp(want.data(), signature.data(), want.size()) != 0)
    return refuse("InvalidSignatureException",
                  "The request signature we calculated does not match the signature you provided. Check your AWS "
                  "Secret Access Key and signing method. Consult the service documentation for details.");
  return std::nullopt;
}

}  // namespace sluice::mock::bedrock
