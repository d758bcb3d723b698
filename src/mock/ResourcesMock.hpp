// ResourcesMock: the mock provider's share of the rest of the OpenAI API: moderations, image
// generation / edits / variations, speech (audio bytes in chunks, or SSE with stream_format
// "sse"), transcriptions and translations (JSON, text, or SSE with stream=true), files (upload,
// list, retrieve, content, delete) and batches (create, retrieve, list, cancel; a batch is
// completed on its first retrieve, with an output file of one line per input line). Files and
// batches are kept in memory per mock process. Thread-safe.
#pragma once
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/Server.hpp"

namespace sluice::mock {

class ResourcesMock {
 public:
  // Whether `path` is one of these endpoints (any method).
  static bool handles(std::string_view path);
  // Answers the request; `chunks` is the mock's chunk count (speech is sent in that many pieces).
  boost::asio::awaitable<void> serve(http::Request& req, http::Responder& r, std::string_view path, int chunks);

 private:
  // A streamed answer: its type and the pieces it is written in.
  struct StreamPlan {
    std::string type;
    std::vector<std::string> pieces;
  };
  // The whole answer, or (with `plan` set) how to stream it.
  http::Response answer(http::Request& req, std::string_view path, int chunks, std::optional<StreamPlan>& plan);
  struct File {
    std::string id, filename, purpose, content;
    std::int64_t created_at = 0;
  };
  struct Batch {
    std::string id, endpoint, input_file_id, completion_window, status, output_file_id;
    std::int64_t created_at = 0;
    std::int64_t lines = 0;
  };
  http::Response files(http::Request& req, std::string_view rest);
  http::Response batches(http::Request& req, std::string_view rest);

  std::mutex mu_;
  std::map<std::string, File> files_;  // by id, in id order (ids grow)
  std::map<std::string, Batch> batches_;
  std::uint64_t next_ = 0;
};

}  // namespace sluice::mock
