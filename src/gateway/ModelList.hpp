// ModelList: the names a provider's model-list answer holds (model discovery). Its body is the
// provider's, so untrusted: only names `serves` accepts (the channel's globs, which accept only
// names that follow the model-name rule) are kept; no space or quote; at most kMaxModels;
// sorted, without repeats. Pure; thread-safe.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::gateway {

inline constexpr std::size_t kMaxListedModels = 10'000;

// `gemini`: the body is Gemini's {"models":[{"name":"models/..."}]}; else OpenAI's or
// Anthropic's {"data":[{"id":...}]}. nullopt with `why` set: not such a body.
std::optional<std::vector<std::string>> parseModelList(bool gemini, std::string_view body,
                                                       const std::function<bool(std::string_view)>& serves,
                                                       std::string& why);

// Where the provider's next page starts, when its answer says there is one: Gemini's
// nextPageToken, Anthropic's last_id when has_more is true. Untrusted: at most 1024 bytes, and it
// goes into the next request only percent-encoded. nullopt: this was the last page.
std::optional<std::string> nextPageToken(bool gemini, std::string_view body);

}  // namespace sluice::gateway
