// ws_turns: an agent loop's turns against /v1/responses, over the WebSocket mode or over POSTs,
// for bench/ws.sh. CONNS connections each run TURNS turns one after another (a turn waits for
// the previous one's whole answer, as an agent waits for the model before calling its tool):
//   ws   one WebSocket per connection; turn 1 sends its input, every later turn only its new
//        input with previous_response_id (the gateway expands the chain);
//   post one keep-alive HTTP/1.1 connection per connection; every turn POSTs the whole
//        conversation so far (what a client without the WebSocket mode sends), stream: true.
// The conversation grows by one user item and the answer per turn in both. Prints one JSON
// line: turns done and failed, per-turn latency (send to the terminal event) mean / p50 / p90 /
// p99 in ms, the wall time, and the request bytes sent.
//   ws_turns HOST PORT KEY MODEL ws|post CONNS TURNS
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace websocket = beast::websocket;
namespace json = boost::json;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string host, port, key, model, mode;
  int conns = 1, turns = 1;
};

struct Result {
  std::vector<double> ms;
  long failed = 0;
  std::uint64_t sent = 0;
};

json::object userItem(int turn) {
  return json::object{{"type", "message"}, {"role", "user"}, {"content", "Turn " + std::to_string(turn) + ": go on."}};
}

bool terminal(std::string_view type) {
  return type == "response.completed" || type == "response.incomplete" || type == "response.failed" || type == "error";
}

void runWs(const Args& a, Result& r) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  websocket::stream<tcp::socket> ws(ioc);
  net::connect(ws.next_layer(), resolver.resolve(a.host, a.port));
  ws.set_option(websocket::stream_base::decorator(
      [&](websocket::request_type& req) { req.set(bhttp::field::authorization, "Bearer " + a.key); }));
  ws.handshake(a.host + ":" + a.port, "/v1/responses");
  std::string prev;
  beast::flat_buffer buf;
  for (int t = 0; t < a.turns; ++t) {
    json::object msg{{"type", "response.create"}, {"model", a.model}, {"store", false}};
    msg["input"] = json::array{userItem(t)};
    if (!prev.empty()) msg["previous_response_id"] = prev;
    const std::string text = json::serialize(msg);
    const auto start = Clock::now();
    ws.text(true);
    ws.write(net::buffer(text));
    r.sent += text.size();
    bool ok = false;
    for (;;) {
      buf.clear();
      ws.read(buf);
      auto v = json::parse(beast::buffers_to_string(buf.data()));
      const auto& o = v.as_object();
      std::string_view type = o.at("type").as_string();
      if (!terminal(type)) continue;
      if (type == "response.completed") {
        ok = true;
        prev = std::string(o.at("response").at("id").as_string());
      }
      break;
    }
    r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!ok) {
      ++r.failed;
      prev.clear();
    }
  }
  ws.close(websocket::close_code::normal);
}

void runPost(const Args& a, Result& r) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  stream.connect(resolver.resolve(a.host, a.port));
  json::array history;
  beast::flat_buffer buf;
  for (int t = 0; t < a.turns; ++t) {
    history.push_back(userItem(t));
    json::object body{{"model", a.model}, {"store", false}, {"stream", true}, {"input", history}};
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/responses", 11};
    req.set(bhttp::field::host, a.host + ":" + a.port);
    req.set(bhttp::field::authorization, "Bearer " + a.key);
    req.set(bhttp::field::content_type, "application/json");
    req.body() = json::serialize(body);
    req.prepare_payload();
    const auto start = Clock::now();
    r.sent += bhttp::write(stream, req);
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64u << 20);
    bhttp::read(stream, buf, parser);
    r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    const auto& res = parser.get();
    // The answer's text: what the next turn carries as the assistant's item.
    std::string answer;
    bool ok = res.result_int() == 200 && res.body().find("response.completed") != std::string::npos;
    std::size_t pos = 0;
    while ((pos = res.body().find("\"delta\":\"", pos)) != std::string::npos) {
      pos += 9;
      auto end = res.body().find('"', pos);
      answer.append(res.body(), pos, end - pos);
    }
    if (!ok) ++r.failed;
    history.push_back(json::object{{"type", "message"},
                                   {"role", "assistant"},
                                   {"content", json::array{json::object{{"type", "output_text"}, {"text", answer}}}}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: ws_turns HOST PORT KEY MODEL ws|post CONNS TURNS\n");
    return 2;
  }
  Args a{argv[1], argv[2], argv[3], argv[4], argv[5], std::atoi(argv[6]), std::atoi(argv[7])};
  std::vector<Result> results(static_cast<std::size_t>(a.conns));
  std::atomic<int> errors{0};
  std::mutex m;
  std::string firstError;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < a.conns; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (a.mode == "ws") {
          runWs(a, results[static_cast<std::size_t>(i)]);
        } else {
          runPost(a, results[static_cast<std::size_t>(i)]);
        }
      } catch (const std::exception& e) {
        errors.fetch_add(1);
        std::lock_guard lock(m);
        if (firstError.empty()) firstError = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  long failed = 0;
  std::uint64_t sent = 0;
  for (auto& r : results) {
    all.insert(all.end(), r.ms.begin(), r.ms.end());
    failed += r.failed;
    sent += r.sent;
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    if (all.empty()) return 0.0;
    return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))];
  };
  double mean = 0;
  for (double x : all) mean += x;
  if (!all.empty()) mean /= static_cast<double>(all.size());
  std::printf(
      "{\"mode\":\"%s\",\"turns\":%zu,\"failed\":%ld,\"connection_errors\":%d,\"mean_ms\":%.3f,\"p50_ms\":%.3f,"
      "\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"wall_s\":%.3f,\"sent_bytes\":%llu}\n",
      a.mode.c_str(), all.size(), failed, errors.load(), mean, pct(0.5), pct(0.9), pct(0.99), wall,
      static_cast<unsigned long long>(sent));
  if (!firstError.empty()) std::fprintf(stderr, "first connection error: %s\n", firstError.c_str());
  return errors.load() == 0 ? 0 : 1;
}
