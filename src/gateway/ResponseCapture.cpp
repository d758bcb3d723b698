#include "gateway/ResponseCapture.hpp"

#include "core/JsonText.hpp"

namespace sluice::gateway {

namespace json = boost::json;

namespace {

bool kept(std::string_view type) {
  return type == "response.completed" || type == "response.incomplete";
}

// A response object worth keeping: an object with a string id.
bool isResponse(const json::value& v) {
  if (!v.is_object()) return false;
  const auto* id = v.as_object().if_contains("id");
  return id != nullptr && id->is_string() && !id->as_string().empty();
}

}  // namespace

void ResponseCapture::start(bool stream) {
  stream_ = stream;
  too_large_ = false;
  broken_ = false;
  whole_.clear();
  split_ = providers::detail::SseSplitter{};
  final_.reset();
}

void ResponseCapture::feed(std::string_view bytes) {
  if (broken_) return;
  if (!stream_) {
    if (whole_.size() + bytes.size() > max_bytes_) {
      too_large_ = true;
      broken_ = true;
      whole_.clear();
      return;
    }
    whole_.append(bytes);
    return;
  }
  const bool fits = split_.feed(bytes, [&](std::string_view name, std::string_view data) { noteEvent(name, data); });
  if (!fits) broken_ = true;
}

void ResponseCapture::noteEvent(std::string_view name, std::string_view data) {
  // Only the terminal events are parsed: the others are never kept.
  if (!name.empty() && !kept(name)) return;
  if (name.empty() && data.find("\"response.") == std::string_view::npos) return;
  if (data.size() > max_bytes_) {
    too_large_ = true;
    return;
  }
  boost::system::error_code ec;
  json::value v = sluice::parseJson(data, ec);
  if (ec || !v.is_object()) return;
  const auto* type = v.as_object().if_contains("type");
  if (type == nullptr || !type->is_string() || !kept(type->as_string())) return;
  auto* r = v.as_object().if_contains("response");
  if (r != nullptr && isResponse(*r)) final_ = std::move(r->as_object());
}

void ResponseCapture::finish() {
  if (stream_ || broken_ || whole_.empty()) return;
  boost::system::error_code ec;
  json::value v = sluice::parseJson(whole_, ec);
  whole_.clear();
  if (ec || !isResponse(v)) return;
  auto& o = v.as_object();
  if (const auto* obj = o.if_contains("object"); obj && obj->is_string() && obj->as_string() != "response") return;
  final_ = std::move(o);
}

std::optional<json::object> ResponseCapture::take() {
  std::optional<json::object> out = std::move(final_);
  final_.reset();
  return out;
}

}  // namespace sluice::gateway
