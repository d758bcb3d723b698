#include "mock/ResourcesMock.hpp"

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <ctime>
#include <optional>

#include "core/JsonText.hpp"
#include "gateway/Multipart.hpp"
#include "mock/MockGeneration.hpp"

namespace sluice::mock {

namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

std::int64_t now() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

http::Response jsonResponse(int status, const json::value& body) {
  http::Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.set("x-request-id", randomId("req_", 32));
  res.body() = json::serialize(body);
  res.prepare_payload();
  return res;
}

http::Response error(int status, std::string_view message, std::string_view param = {},
                     std::string_view type = "invalid_request_error") {
  json::object e{{"message", message}, {"type", type}};
  e["param"] = param.empty() ? json::value(nullptr) : json::value(param);
  e["code"] = nullptr;
  return jsonResponse(status, json::object{{"error", std::move(e)}});
}

http::Response notFound(std::string_view what, std::string_view id) {
  return error(404, fmt::format("No such {}: '{}'", what, id));
}

// A 1x1 PNG: what every generated image is.
constexpr unsigned char kPngBytes[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00,
    0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01,
    0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
const std::string_view kPng(reinterpret_cast<const char*>(kPngBytes), sizeof kPngBytes);

// The fields of a form body, or an error answer.
struct Form {
  std::map<std::string, std::string> fields;
  std::optional<gateway::FormPart> file;  // the first file part (its data a view into the body)
};
std::optional<http::Response> readForm(const http::Request& req, Form& form, std::string_view file_field) {
  auto boundary = gateway::multipartBoundary(req[bhttp::field::content_type]);
  if (!boundary) return error(400, "Expected a multipart/form-data body with a boundary.");
  const bool ok = gateway::forEachPart(req.body(), *boundary, [&](const gateway::FormPart& p) {
    if (p.filename) {
      if (p.name == file_field && !form.file) form.file = p;
    } else {
      form.fields.emplace(p.name, std::string(p.data));
    }
    return true;
  });
  if (!ok) return error(400, "The multipart body is not well-formed.");
  return std::nullopt;
}

json::object imagesAnswer(std::int64_t n, bool url) {
  json::array data;
  for (std::int64_t i = 0; i < n; ++i) {
    if (url)
      data.push_back(json::object{{"url", fmt::format("https://mock.invalid/images/{}.png", randomId("img_", 16))}});
    else
      data.push_back(json::object{{"b64_json", base64Encode(kPng)}, {"revised_prompt", nullptr}});
  }
  return json::object{
      {"created", now()},
      {"data", std::move(data)},
      {"usage", json::object{{"input_tokens", 10},
                             {"output_tokens", 100 * n},
                             {"total_tokens", 10 + 100 * n},
                             {"input_tokens_details", json::object{{"text_tokens", 10}, {"image_tokens", 0}}}}}};
}

std::int64_t intField(const json::object& o, std::string_view k, std::int64_t def) {
  const auto* v = o.if_contains(k);
  return v && v->is_int64() ? v->as_int64() : def;
}
std::string strField(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

json::object fileJson(const std::string& id, const std::string& filename, const std::string& purpose, std::size_t bytes,
                      std::int64_t created) {
  return json::object{{"id", id},
                      {"object", "file"},
                      {"bytes", bytes},
                      {"created_at", created},
                      {"filename", filename},
                      {"purpose", purpose},
                      {"status", "processed"},
                      {"expires_at", nullptr},
                      {"status_details", nullptr}};
}

}  // namespace

bool ResourcesMock::handles(std::string_view p) {
  if (p.starts_with("/v1/")) p.remove_prefix(3);
  return p == "/moderations" || p == "/images/generations" || p == "/images/edits" || p == "/images/variations" ||
         p == "/audio/speech" || p == "/audio/transcriptions" || p == "/audio/translations" || p == "/files" ||
         p.starts_with("/files/") || p == "/batches" || p.starts_with("/batches/");
}

http::Response ResourcesMock::answer(http::Request& req, std::string_view path, int chunks,
                                     std::optional<StreamPlan>& plan) {
  std::string_view p = path;
  if (p.starts_with("/v1/")) p.remove_prefix(3);
  const bool post = req.method() == bhttp::verb::post;
  if (p.starts_with("/files")) {
    http::Response res = files(req, p.substr(6));
    return res;
  }
  if (p.starts_with("/batches")) {
    http::Response res = batches(req, p.substr(8));
    return res;
  }
  if (!post) {
    return error(405, fmt::format("{} takes POST", path));
  }
  const bool multipart =
      p == "/images/edits" || p == "/images/variations" || p == "/audio/transcriptions" || p == "/audio/translations";
  json::object body;
  Form form;
  if (multipart) {
    if (auto bad = readForm(req, form, p.starts_with("/images") ? "image" : "file")) {
      return std::move(*bad);
    }
    for (const auto& [k, v] : form.fields) body[k] = v;
    if (!form.file) {
      return error(400, p.starts_with("/images") ? "image is required" : "file is required",
                   p.starts_with("/images") ? "image" : "file");
    }
  } else {
    boost::system::error_code ec;
    json::value v = sluice::parseJson(req.body(), ec);
    if (ec || !v.is_object()) {
      return error(400, "We could not parse the JSON body of your request.");
    }
    body = std::move(v.as_object());
  }

  if (p == "/moderations") {
    json::array results;
    auto one = [&](std::string_view text) {
      const bool flagged = text.find("violence") != std::string_view::npos;
      results.push_back(
          json::object{{"flagged", flagged},
                       {"categories", json::object{{"violence", flagged}, {"harassment", false}}},
                       {"category_scores", json::object{{"violence", flagged ? 0.98 : 0.01}, {"harassment", 0.01}}}});
    };
    const auto* in = body.if_contains("input");
    if (in && in->is_string()) {
      one(in->as_string());
    } else if (in && in->is_array()) {
      for (const auto& x : in->as_array()) one(x.is_string() ? std::string_view(x.as_string()) : std::string_view());
    } else {
      return error(400, "input is required", "input");
    }
    const std::string model = strField(body, "model");
    return jsonResponse(200, json::object{{"id", randomId("modr-", 24)},
                                          {"model", model.empty() ? "omni-moderation-latest" : model},
                                          {"results", std::move(results)}});
  }
  if (p.starts_with("/images/")) {
    if (p == "/images/generations" && strField(body, "prompt").empty()) {
      return error(400, "prompt is required", "prompt");
    }
    std::int64_t n = 1;
    if (multipart) {
      if (auto it = form.fields.find("n"); it != form.fields.end()) n = std::atoll(it->second.c_str());
    } else {
      n = intField(body, "n", 1);
    }
    if (n < 1 || n > 10) {
      return error(400, "n must be between 1 and 10", "n");
    }
    return jsonResponse(200, imagesAnswer(n, strField(body, "response_format") == "url"));
  }
  if (p == "/audio/speech") {
    const std::string input = strField(body, "input");
    if (strField(body, "model").empty() || input.empty() || strField(body, "voice").empty()) {
      return error(400, "model, input and voice are required");
    }
    // The "audio": the input's bytes, repeated to a few KB, in `chunks` pieces.
    std::string audio = "ID3mock:";
    while (audio.size() < 4096) audio += input;
    const std::size_t pieces = static_cast<std::size_t>(std::max(1, chunks));
    const std::size_t step = (audio.size() + pieces - 1) / pieces;
    plan.emplace();
    if (strField(body, "stream_format") == "sse") {
      plan->type = "text/event-stream";
      for (std::size_t i = 0; i < audio.size(); i += step)
        plan->pieces.push_back(
            "data: " +
            json::serialize(json::object{{"type", "speech.audio.delta"},
                                         {"audio", base64Encode(std::string_view(audio).substr(i, step))}}) +
            "\n\n");
      const auto in = static_cast<std::int64_t>(input.size() / 4 + 1),
                 out = static_cast<std::int64_t>(audio.size() / 64);
      plan->pieces.push_back(
          "data: " +
          json::serialize(json::object{
              {"type", "speech.audio.done"},
              {"usage", json::object{{"input_tokens", in}, {"output_tokens", out}, {"total_tokens", in + out}}}}) +
          "\n\n");
      return {};
    }
    const std::string format = strField(body, "response_format");
    plan->type = format == "wav" ? "audio/wav" : format == "opus" ? "audio/ogg" : "audio/mpeg";
    for (std::size_t i = 0; i < audio.size(); i += step)
      plan->pieces.emplace_back(std::string_view(audio).substr(i, step));
    return {};
  }
  // Transcriptions and translations: the "text" says what was heard: the file's name and size.
  if (body.if_contains("model") == nullptr || strField(body, "model").empty()) {
    return error(400, "model is required", "model");
  }
  const std::string text =
      fmt::format("Mock {} of {} ({} bytes).", p == "/audio/translations" ? "translation" : "transcription",
                  form.file->filename.value_or("audio"), form.file->data.size());
  if (strField(body, "stream") == "true" && p == "/audio/transcriptions") {
    plan.emplace();
    plan->type = "text/event-stream";
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto sp = text.find(' ', pos);
      const std::size_t end = sp == std::string::npos ? text.size() : sp + 1;
      plan->pieces.push_back(
          "data: " +
          json::serialize(json::object{{"type", "transcript.text.delta"}, {"delta", text.substr(pos, end - pos)}}) +
          "\n\n");
      pos = end;
    }
    plan->pieces.push_back(
        "data: " +
        json::serialize(json::object{
            {"type", "transcript.text.done"},
            {"text", text},
            {"usage",
             json::object{{"type", "tokens"}, {"input_tokens", 20}, {"output_tokens", 10}, {"total_tokens", 30}}}}) +
        "\n\n");
    return {};
  }
  const std::string format = strField(body, "response_format");
  if (format == "text" || format == "srt" || format == "vtt") {
    http::Response res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
    res.body() = text + "\n";
    res.prepare_payload();
    return res;
  }
  json::object answer{{"text", text}};
  if (p == "/audio/transcriptions")
    answer["usage"] =
        json::object{{"type", "tokens"}, {"input_tokens", 20}, {"output_tokens", 10}, {"total_tokens", 30}};
  return jsonResponse(200, answer);
}

boost::asio::awaitable<void> ResourcesMock::serve(http::Request& req, http::Responder& r, std::string_view path,
                                                  int chunks) {
  std::optional<StreamPlan> plan;
  http::Response res = answer(req, path, chunks, plan);
  if (!plan) {
    co_await r.send(std::move(res));
    co_return;
  }
  const std::string lines = "Content-Type: " + plan->type + "\r\nx-request-id: " + randomId("req_", 32) + "\r\n";
  static constexpr std::string_view kOk = "OK";
  if (!co_await r.beginStream(200, kOk, lines)) co_return;
  for (std::size_t i = 0; i < plan->pieces.size(); ++i) {
    const bool last = i + 1 == plan->pieces.size();
    const bool ok = last ? co_await r.writeLastChunk(plan->pieces[i]) : co_await r.writeChunk(plan->pieces[i]);
    if (!ok) co_return;
  }
  if (plan->pieces.empty()) co_await r.endStream();
}

http::Response ResourcesMock::files(http::Request& req, std::string_view rest) {
  const auto method = req.method();
  std::lock_guard lock(mu_);
  if (rest.empty()) {
    if (method == bhttp::verb::get) {
      json::array data;
      for (const auto& [id, f] : files_)
        data.push_back(fileJson(id, f.filename, f.purpose, f.content.size(), f.created_at));
      return jsonResponse(200, json::object{{"object", "list"}, {"data", std::move(data)}, {"has_more", false}});
    }
    if (method != bhttp::verb::post) return error(405, "/v1/files takes GET or POST");
    Form form;
    if (auto bad = readForm(req, form, "file")) return std::move(*bad);
    auto purpose = form.fields.find("purpose");
    if (purpose == form.fields.end() || purpose->second.empty()) return error(400, "purpose is required", "purpose");
    if (!form.file) return error(400, "file is required", "file");
    File f{fmt::format("file-{:06d}{}", ++next_, randomId("", 16)), form.file->filename.value_or("upload"),
           purpose->second, std::string(form.file->data), now()};
    auto answer = fileJson(f.id, f.filename, f.purpose, f.content.size(), f.created_at);
    files_.emplace(f.id, std::move(f));
    return jsonResponse(200, answer);
  }
  // /{id} or /{id}/content
  rest.remove_prefix(1);
  const auto slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const bool content = slash != std::string_view::npos && rest.substr(slash) == "/content";
  auto it = files_.find(id);
  if (it == files_.end()) return notFound("file", id);
  const File& f = it->second;
  if (content) {
    if (method != bhttp::verb::get) return error(405, "content takes GET");
    http::Response res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "application/octet-stream");
    res.set(bhttp::field::content_disposition, fmt::format("attachment; filename=\"{}\"", f.filename));
    res.body() = f.content;
    res.prepare_payload();
    return res;
  }
  if (method == bhttp::verb::get)
    return jsonResponse(200, fileJson(id, f.filename, f.purpose, f.content.size(), f.created_at));
  if (method == bhttp::verb::delete_) {
    files_.erase(it);
    return jsonResponse(200, json::object{{"id", id}, {"object", "file"}, {"deleted", true}});
  }
  return error(405, "a file takes GET or DELETE");
}

http::Response ResourcesMock::batches(http::Request& req, std::string_view rest) {
  const auto method = req.method();
  std::lock_guard lock(mu_);
  auto batchJson = [](const Batch& b) {
    json::object o{{"id", b.id},
                   {"object", "batch"},
                   {"endpoint", b.endpoint},
                   {"input_file_id", b.input_file_id},
                   {"completion_window", b.completion_window},
                   {"status", b.status},
                   {"created_at", b.created_at},
                   {"errors", nullptr},
                   {"error_file_id", nullptr},
                   {"metadata", nullptr}};
    o["output_file_id"] = b.output_file_id.empty() ? json::value(nullptr) : json::value(b.output_file_id);
    const bool done = b.status == "completed";
    o["request_counts"] = json::object{{"total", b.lines}, {"completed", done ? b.lines : 0}, {"failed", 0}};
    return o;
  };
  if (rest.empty()) {
    if (method == bhttp::verb::get) {
      json::array data;
      for (auto it = batches_.rbegin(); it != batches_.rend(); ++it) data.push_back(batchJson(it->second));
      return jsonResponse(200, json::object{{"object", "list"}, {"data", std::move(data)}, {"has_more", false}});
    }
    if (method != bhttp::verb::post) return error(405, "/v1/batches takes GET or POST");
    boost::system::error_code ec;
    json::value v = sluice::parseJson(req.body(), ec);
    if (ec || !v.is_object()) return error(400, "We could not parse the JSON body of your request.");
    const auto& o = v.as_object();
    Batch b;
    b.input_file_id = strField(o, "input_file_id");
    b.endpoint = strField(o, "endpoint");
    b.completion_window = strField(o, "completion_window");
    if (b.input_file_id.empty()) return error(400, "input_file_id is required", "input_file_id");
    auto in = files_.find(b.input_file_id);
    if (in == files_.end()) return notFound("file", b.input_file_id);
    if (b.endpoint.empty()) return error(400, "endpoint is required", "endpoint");
    for (char c : in->second.content) b.lines += c == '\n' ? 1 : 0;
    b.id = fmt::format("batch_{:06d}{}", ++next_, randomId("", 16));
    b.status = "validating";
    b.created_at = now();
    auto answer = batchJson(b);
    batches_.emplace(b.id, std::move(b));
    return jsonResponse(200, answer);
  }
  rest.remove_prefix(1);
  const auto slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  auto it = batches_.find(id);
  if (it == batches_.end()) return notFound("batch", id);
  Batch& b = it->second;
  if (slash != std::string_view::npos) {
    if (rest.substr(slash) != "/cancel" || method != bhttp::verb::post) return error(404, "Not found");
    if (b.status == "completed") return error(400, "Cannot cancel a batch with status 'completed'.");
    b.status = "cancelled";
    return jsonResponse(200, batchJson(b));
  }
  if (method != bhttp::verb::get) return error(405, "a batch takes GET");
  // A batch completes on its first look: one output line per input line.
  if (b.status == "validating") {
    auto in = files_.find(b.input_file_id);
    std::string out;
    if (in != files_.end()) {
      std::size_t pos = 0;
      const std::string& c = in->second.content;
      while (pos < c.size()) {
        auto nl = c.find('\n', pos);
        if (nl == std::string::npos) nl = c.size();
        if (nl > pos) {
          std::string custom;
          boost::system::error_code ec;
          json::value line = sluice::parseJson(std::string_view(c).substr(pos, nl - pos), ec);
          if (!ec && line.is_object()) custom = strField(line.as_object(), "custom_id");
          out += json::serialize(json::object{
              {"id", randomId("batch_req_", 24)},
              {"custom_id", custom},
              {"response", json::object{{"status_code", 200}, {"body", json::object{{"object", "chat.completion"}}}}},
              {"error", nullptr}});
          out += '\n';
        }
        pos = nl + 1;
      }
    }
    File f{fmt::format("file-{:06d}{}", ++next_, randomId("", 16)), "batch_output.jsonl", "batch_output",
           std::move(out), now()};
    b.output_file_id = f.id;
    files_.emplace(f.id, std::move(f));
    b.status = "completed";
  }
  return jsonResponse(200, batchJson(b));
}

}  // namespace sluice::mock
