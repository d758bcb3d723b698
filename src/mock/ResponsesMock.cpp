#include "mock/ResponsesMock.hpp"

#include "mock/OpenAIMock.hpp"

#include <boost/json.hpp>

#include <functional>

namespace sluice::mock::responses {

namespace json = boost::json;

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v && !v->is_null()) ? v : nullptr;
}

std::int64_t tokensOf(std::size_t bytes) {
  return static_cast<std::int64_t>((bytes + 3) / 4) + 4;
}

ApiError badValue(std::string_view param, std::string message) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::string(param);
  e.code = "invalid_value";
  return e;
}

std::string echoValue(const json::object& o, std::string_view key, std::string_view fallback) {
  const auto* v = field(o, key);
  return v ? json::serialize(*v) : std::string(fallback);
}

// As Chat's: input_tokens with the cache reads and writes, output_tokens with the reasoning.
std::string usageJson(std::int64_t input, std::int64_t output, const ExtraUsage& x) {
  input += x.cache_read + x.cache_write;
  output += x.reasoning;
  std::string s = "{\"input_tokens\":" + std::to_string(input) +
                  ",\"input_tokens_details\":{\"cached_tokens\":" + std::to_string(x.cache_read);
  if (x.cache_write > 0) s += ",\"cache_write_tokens\":" + std::to_string(x.cache_write);
  s += "},\"output_tokens\":" + std::to_string(output);
  s += ",\"output_tokens_details\":{\"reasoning_tokens\":" + std::to_string(x.reasoning) +
       "},\"total_tokens\":" + std::to_string(input + output) + "}";
  return s;
}

bool incomplete(const Generation& gen) {
  return gen.truncated_by_length && !gen.hasToolCalls();
}

// The Response object with the given status, output items and usage (JSON text or "null").
std::string responseObject(const ResponsesRequest& req, const ResponseMeta& meta, std::string_view status,
                           bool truncated, std::string_view output, std::string_view usage) {
  std::string o;
  o.reserve(640 + output.size() + req.echo.size());
  o += "{\"id\":";
  appendJsonString(o, meta.id);
  o += ",\"object\":\"response\",\"created_at\":" + std::to_string(meta.created_at);
  o += ",\"status\":\"";
  o += status;
  o += "\",\"background\":false,\"error\":null,\"incomplete_details\":";
  o += truncated ? "{\"reason\":\"max_output_tokens\"}" : "null";
  o += ",\"model\":";
  appendJsonString(o, req.model);
  o += ",\"output\":[";
  o += output;
  o += "],";
  o += req.echo;
  o += ",\"usage\":";
  o += usage;
  o += '}';
  return o;
}

void appendMessageItem(std::string& out, const ResponseMeta& meta, std::string_view status, const std::string* text) {
  out += "{\"id\":";
  appendJsonString(out, meta.message_id);
  out += ",\"type\":\"message\",\"status\":\"";
  out += status;
  out += "\",\"content\":[";
  if (text) {
    out += "{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":";
    appendJsonString(out, *text);
    out += '}';
  }
  out += "],\"role\":\"assistant\"}";
}

std::string callItemId(const ToolCall& c) {
  return (c.custom ? "ctc_" : "fc_") + c.id_token;
}

// A function_call item, or a custom_tool_call item for a custom tool; "namespace" when it has one.
void appendFunctionCallItem(std::string& out, const ToolCall& c, bool done) {
  out += "{\"id\":";
  appendJsonString(out, callItemId(c));
  out += c.custom ? ",\"type\":\"custom_tool_call\",\"status\":\"" : ",\"type\":\"function_call\",\"status\":\"";
  out += done ? "completed" : "in_progress";
  out += c.custom ? "\",\"input\":" : "\",\"arguments\":";
  appendJsonString(out, done ? std::string_view(c.arguments) : std::string_view());
  out += ",\"call_id\":\"call_";
  out += c.id_token;
  out += "\",\"name\":";
  appendJsonString(out, c.name);
  if (!c.ns.empty()) {
    out += ",\"namespace\":";
    appendJsonString(out, c.ns);
  }
  out += '}';
}

std::string outputItems(const Generation& gen, const ResponseMeta& meta) {
  std::string out;
  if (gen.hasToolCalls()) {
    bool first = true;
    for (const auto& c : gen.tools->calls) {
      if (!first) out += ',';
      first = false;
      appendFunctionCallItem(out, c, true);
    }
  } else {
    const std::string text = gen.text();
    appendMessageItem(out, meta, incomplete(gen) ? "incomplete" : "completed", &text);
  }
  return out;
}

// "event: NAME\ndata: {"type":"NAME","sequence_number":N<rest>}\n\n"; rest starts with ',' or is empty.
void appendEvent(std::string& out, std::string_view name, std::size_t seq, std::string_view rest) {
  out += "event: ";
  out += name;
  out += "\ndata: {\"type\":\"";
  out += name;
  out += "\",\"sequence_number\":";
  out += std::to_string(seq);
  out += rest;
  out += "}\n\n";
}

std::string event(std::string_view name, std::size_t seq, std::string_view rest) {
  std::string e;
  appendEvent(e, name, seq, rest);
  return e;
}

std::string itemRef(std::string_view item_id, std::size_t output_index) {
  std::string r = ",\"item_id\":";
  appendJsonString(r, item_id);
  r += ",\"output_index\":" + std::to_string(output_index);
  return r;
}

// The events that close function call j (arguments done, item done), then open call j+1.
void appendCallDone(std::string& out, const ToolCall& c, std::size_t j, std::size_t seq) {
  std::string rest = itemRef(callItemId(c), j) + (c.custom ? ",\"input\":" : ",\"arguments\":");
  appendJsonString(rest, c.arguments);
  appendEvent(out, c.custom ? "response.custom_tool_call_input.done" : "response.function_call_arguments.done", seq,
              rest);
  std::string item = ",\"output_index\":" + std::to_string(j) + ",\"item\":";
  appendFunctionCallItem(item, c, true);
  appendEvent(out, "response.output_item.done", seq + 1, item);
}

void appendCallAdded(std::string& out, const ToolCall& c, std::size_t j, std::size_t seq) {
  std::string item = ",\"output_index\":" + std::to_string(j) + ",\"item\":";
  appendFunctionCallItem(item, c, false);
  appendEvent(out, "response.output_item.added", seq, item);
}

}  // namespace

std::optional<ApiError> parseResponsesRequest(const json::value& body, ResponsesRequest& out) {
  const auto* o = body.if_object();
  if (!o) {
    ApiError e;
    e.message = std::string("Invalid type for request body: expected an object, but got ") + openai::kindName(body) +
                " instead.";
    e.code = "invalid_type";
    return e;
  }
  const auto* model = field(*o, "model");
  if (!model) return openai::missingParam("model");
  if (!model->is_string()) return openai::invalidType("model", "a string", *model);
  out.model = std::string(model->get_string());

  if (const auto* s = field(*o, "stream")) {
    if (!s->is_bool()) return openai::invalidType("stream", "a boolean", *s);
    out.stream = s->get_bool();
  }
  if (const auto* mt = field(*o, "max_output_tokens")) {
    std::int64_t v = 0;
    if (!openai::asInteger(*mt, v)) return openai::invalidType("max_output_tokens", "an integer", *mt);
    if (v < 1) {
      ApiError e;
      e.message = "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got " +
                  std::to_string(v) + " instead.";
      e.param = "max_output_tokens";
      e.code = "integer_below_min_value";
      return e;
    }
    out.max_output_tokens = v;
  }

  ToolRequest tr;
  std::int64_t tokens = 0;
  if (const auto* ins = field(*o, "instructions")) {
    if (!ins->is_string()) return openai::invalidType("instructions", "a string", *ins);
    if (!ins->get_string().empty()) tokens += tokensOf(ins->get_string().size());
  }
  if (const auto* input = field(*o, "input")) {
    if (input->is_string()) {
      tokens += tokensOf(input->get_string().size());
      tr.last_user_text = std::string(input->get_string());
    } else if (input->is_array()) {
      const auto& items = input->get_array();
      std::size_t last_user = items.size();
      for (std::size_t i = 0; i < items.size(); ++i) {
        const auto* it = items[i].if_object();
        if (!it) return openai::invalidType("input[" + std::to_string(i) + "]", "an object", items[i]);
        const auto* type = field(*it, "type");
        const auto* role = field(*it, "role");
        std::size_t bytes = 0;
        if (const auto* c = field(*it, "content")) bytes += contentText(*c).size();
        for (std::string_view k : {"name", "arguments"})
          if (const auto* s = field(*it, k); s && s->is_string()) bytes += s->get_string().size();
        if (const auto* out_v = field(*it, "output")) bytes += contentText(*out_v).size();
        tokens += tokensOf(bytes);
        const bool message = !type || (type->is_string() && type->get_string() == "message");
        if (message && role && role->is_string() && role->get_string() == "user") last_user = i;
      }
      if (last_user < items.size())
        if (const auto* c = field(items[last_user].get_object(), "content")) tr.last_user_text = contentText(*c);
      // A partial answer to continue: a trailing assistant message, or the one before a last user
      // message that asks to continue it.
      auto assistantText = [&](std::size_t i) -> std::string {
        if (i >= items.size()) return {};
        const auto& it = items[i].get_object();
        const auto* type = field(it, "type");
        const auto* role = field(it, "role");
        const bool message = !type || (type->is_string() && type->get_string() == "message");
        if (!message || !role || !role->is_string() || role->get_string() != "assistant") return {};
        const auto* c = field(it, "content");
        return c ? contentText(*c) : std::string();
      };
      tr.partial_answer = partialAnswer(items.size(), last_user, tr.last_user_text, assistantText);
      for (std::size_t i = last_user < items.size() ? last_user + 1 : 0; i < items.size(); ++i) {
        const auto& it = items[i].get_object();
        const auto* type = field(it, "type");
        if (!type || !type->is_string() ||
            (type->get_string() != "function_call_output" && type->get_string() != "custom_tool_call_output"))
          continue;
        const auto* output = field(it, "output");
        tr.tool_results.push_back(output ? contentText(*output) : std::string());
      }
    } else {
      return openai::invalidType("input", "a string or an array", *input);
    }
  }
  out.input_tokens = tokens;

  // Function and custom tools, from `tools` and from additional_tools input items, inside
  // namespaces or not.
  std::function<std::optional<ApiError>(const json::array&, const std::string&, const std::string&)> collect =
      [&](const json::array& list, const std::string& path, const std::string& ns) -> std::optional<ApiError> {
    std::size_t i = 0;
    for (const auto& t : list) {
      const std::string tp = path + "[" + std::to_string(i++) + "]";
      const auto* to = t.if_object();
      if (!to) return openai::invalidType(tp, "an object", t);
      const auto* type = field(*to, "type");
      if (!type || !type->is_string()) continue;
      const auto kind = type->get_string();
      if (kind != "function" && kind != "custom" && kind != "namespace") continue;
      const auto* name = field(*to, "name");
      if (!name || !name->is_string()) return openai::missingParam(tp + ".name");
      if (kind == "namespace") {
        const auto* inner = field(*to, "tools");
        if (!inner) continue;
        if (!inner->is_array()) return openai::invalidType(tp + ".tools", "an array", *inner);
        if (auto err = collect(inner->get_array(), tp + ".tools", std::string(name->get_string()))) return err;
        continue;
      }
      tr.tools.push_back({std::string(name->get_string()), field(*to, "parameters"), ns, kind == "custom"});
    }
    return std::nullopt;
  };
  if (const auto* tools = field(*o, "tools")) {
    if (!tools->is_array()) return openai::invalidType("tools", "an array", *tools);
    if (auto err = collect(tools->get_array(), "tools", {})) return err;
  }
  if (const auto* input = field(*o, "input"); input && input->is_array()) {
    std::size_t i = 0;
    for (const auto& it : input->get_array()) {
      const std::string ip = "input[" + std::to_string(i++) + "]";
      const auto* type = field(it.get_object(), "type");
      if (!type || !type->is_string() || type->get_string() != "additional_tools") continue;
      const auto* tools = field(it.get_object(), "tools");
      if (!tools) continue;
      if (!tools->is_array()) return openai::invalidType(ip + ".tools", "an array", *tools);
      if (auto err = collect(tools->get_array(), ip + ".tools", {})) return err;
    }
  }
  if (const auto* tc = field(*o, "tool_choice")) {
    if (tc->is_string()) {
      const auto m = tc->get_string();
      if (m == "none")
        tr.mode = ToolChoiceMode::None;
      else if (m == "required")
        tr.mode = ToolChoiceMode::Required;
      else if (m != "auto")
        return badValue("tool_choice",
                        "Invalid value for 'tool_choice': expected one of 'none', 'auto' or "
                        "'required', or an object.");
    } else if (const auto* tco = tc->if_object()) {
      const auto* type = field(*tco, "type");
      const auto* name = field(*tco, "name");
      if (type && type->is_string() && type->get_string() == "function" && name && name->is_string()) {
        tr.mode = ToolChoiceMode::Named;
        tr.forced_name = std::string(name->get_string());
      }
    } else {
      return openai::invalidType("tool_choice", "a string or an object", *tc);
    }
  }
  if (const auto* p = field(*o, "parallel_tool_calls")) {
    if (!p->is_bool()) return openai::invalidType("parallel_tool_calls", "a boolean", *p);
    tr.parallel = p->get_bool();
  }
  out.tools = decideTools(tr);

  std::string& e = out.echo;
  e += "\"instructions\":" + echoValue(*o, "instructions", "null");
  e += ",\"max_output_tokens\":" + echoValue(*o, "max_output_tokens", "null");
  e += ",\"max_tool_calls\":null";
  e += ",\"parallel_tool_calls\":" + echoValue(*o, "parallel_tool_calls", "true");
  e += ",\"previous_response_id\":" + echoValue(*o, "previous_response_id", "null");
  e += ",\"reasoning\":{\"effort\":null,\"summary\":null}";
  e += ",\"service_tier\":\"default\"";
  e += ",\"store\":" + echoValue(*o, "store", "true");
  e += ",\"temperature\":" + echoValue(*o, "temperature", "1.0");
  e += ",\"text\":" + echoValue(*o, "text", "{\"format\":{\"type\":\"text\"},\"verbosity\":\"medium\"}");
  e += ",\"tool_choice\":" + echoValue(*o, "tool_choice", "\"auto\"");
  e += ",\"tools\":" + echoValue(*o, "tools", "[]");
  e += ",\"top_logprobs\":0";
  e += ",\"top_p\":" + echoValue(*o, "top_p", "1.0");
  e += ",\"truncation\":" + echoValue(*o, "truncation", "\"disabled\"");
  e += ",\"user\":null";
  e += ",\"metadata\":" + echoValue(*o, "metadata", "{}");
  return std::nullopt;
}

std::string responseJson(const ResponsesRequest& req, const Generation& gen, const ResponseMeta& meta) {
  const bool trunc = incomplete(gen);
  return responseObject(req, meta, trunc ? "incomplete" : "completed", trunc, outputItems(gen, meta),
                        usageJson(req.input_tokens, static_cast<std::int64_t>(gen.tokensPerChoice()), gen.extra));
}

SseScript responseStream(const ResponsesRequest& req, const Generation& gen, const ResponseMeta& meta) {
  SseScript s;
  const std::string pending = responseObject(req, meta, "in_progress", false, "", "null");
  s.head.push_back(event("response.created", 0, ",\"response\":" + pending));
  s.head.push_back(event("response.in_progress", 1, ",\"response\":" + pending));
  const bool trunc = incomplete(gen);
  const std::string final_response =
      responseObject(req, meta, trunc ? "incomplete" : "completed", trunc, outputItems(gen, meta),
                     usageJson(req.input_tokens, static_cast<std::int64_t>(gen.tokensPerChoice()), gen.extra));
  const char* terminal = trunc ? "response.incomplete" : "response.completed";

  if (gen.hasToolCalls()) {
    const auto& calls = gen.tools->calls;
    {
      std::string e;
      appendCallAdded(e, calls[0], 0, 2);
      s.head.push_back(std::move(e));
    }
    s.content_count = gen.pieces;
    // Step i of call j has sequence number 3 + i + 3j: each later call first closes the previous
    // one (arguments done, item done) and opens itself (item added).
    s.content = [gen](std::size_t step, std::string& out) {
      const auto [j, d] = gen.tools->steps[step];
      const ToolCall& c = gen.tools->calls[j];
      if (d == 0 && j > 0) {
        const std::size_t seq = 3 + step + 3 * (j - 1);
        appendCallDone(out, gen.tools->calls[j - 1], j - 1, seq);
        appendCallAdded(out, c, j, seq + 2);
      }
      std::string rest = itemRef(callItemId(c), j) + ",\"delta\":";
      appendJsonString(rest, c.deltas[d]);
      appendEvent(out, c.custom ? "response.custom_tool_call_input.delta" : "response.function_call_arguments.delta",
                  3 + step + 3 * j, rest);
    };
    const std::size_t last = calls.size() - 1;
    const std::size_t seq = 3 + gen.pieces + 3 * last;
    std::string done;
    appendCallDone(done, calls[last], last, seq);
    s.tail.push_back(std::move(done));
    s.tail.push_back(event(terminal, seq + 2, ",\"response\":" + final_response));
    return s;
  }

  std::string added = ",\"output_index\":0,\"item\":";
  appendMessageItem(added, meta, "in_progress", nullptr);
  s.head.push_back(event("response.output_item.added", 2, added));
  const std::string ref = itemRef(meta.message_id, 0) + ",\"content_index\":0";
  s.head.push_back(
      event("response.content_part.added", 3,
            ref + ",\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"\"}"));
  auto shared_ref = std::make_shared<const std::string>(ref);
  s.content_count = gen.pieces;
  s.content = [gen, shared_ref](std::size_t step, std::string& out) {
    std::string rest = *shared_ref + ",\"delta\":";
    appendJsonString(rest, gen.piece(step));
    rest += ",\"logprobs\":[]";
    appendEvent(out, "response.output_text.delta", 4 + step, rest);
  };
  const std::string text = gen.text();
  const std::size_t seq = 4 + gen.pieces;
  {
    std::string rest = ref + ",\"text\":";
    appendJsonString(rest, text);
    rest += ",\"logprobs\":[]";
    s.tail.push_back(event("response.output_text.done", seq, rest));
  }
  {
    std::string rest = ref + ",\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":";
    appendJsonString(rest, text);
    rest += '}';
    s.tail.push_back(event("response.content_part.done", seq + 1, rest));
  }
  {
    std::string rest = ",\"output_index\":0,\"item\":";
    appendMessageItem(rest, meta, trunc ? "incomplete" : "completed", &text);
    s.tail.push_back(event("response.output_item.done", seq + 2, rest));
  }
  s.tail.push_back(event(terminal, seq + 3, ",\"response\":" + final_response));
  return s;
}

}  // namespace sluice::mock::responses
