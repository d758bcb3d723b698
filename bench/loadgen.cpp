// sluice_loadgen: a lean HTTP/1.1 load generator for the Sluice benchmarks.
//
// One thread, one io_context (the client uses at most one core), keep-alive
// connections, hand-written request writing and a minimal response parser
// (Content-Length, chunked, or read-until-close). Per request it records the
// time to the first byte of the response body (TTFB: the first SSE chunk),
// the time to the end of the response (close), the status, and whether the
// body carried `data: [DONE]`. It prints one JSON object on stdout.
//
// https:// URLs go over TLS (OpenSSL through asio::ssl, TLS 1.2 or 1.3 as negotiated, no session
// resumption: a kept-alive connection does one full handshake). The plain and the TLS connection
// are two types and every function on the request path is a template over them, so the plain path
// compiles to what it was before TLS existed.
//
//   sluice_loadgen --url http://127.0.0.1:8080 --mode ping --warmup 3 --count 30
//   sluice_loadgen --url http://127.0.0.1:8080 --mode load --concurrency 50 --duration 15
//       -H 'x-mock-chunks: 20' -H 'Authorization: Bearer sk-master'
//   sluice_loadgen --url http://127.0.0.1:8080 --mode load --concurrency 20 --count 2000
//   sluice_loadgen --url http://127.0.0.1:8080 --mode ping --body-file bench/data/protect_chat.json
//   sluice_loadgen --url https://127.0.0.1:8443 --cacert ca.pem --mode load --concurrency 2000
//       --duration 10 --prime --watch-proxy 1234 --watch-mock 1200
//   sluice_loadgen --url https://127.0.0.1:8443 --insecure --conn-per-request --concurrency 50 -d 5

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <openssl/ssl.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kBufCap = 64 * 1024;
constexpr std::string_view kDone = "data: [DONE]";
// An OpenAI stream's error chunk: a stream that carries one did not succeed, even when [DONE]
// follows it (as a translating gateway's error events are followed).
constexpr std::string_view kErrorEvent = "data: {\"error\"";
constexpr std::size_t kCarry = std::max(kDone.size(), kErrorEvent.size()) - 1;

struct Options {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  std::string path = "/v1/chat/completions";
  std::string model = "gpt-4o-mini";
  std::string content = "hi";
  std::optional<std::string> body;  // --body-file: sent as it is instead of the built-in body
  bool stream = true;
  std::vector<std::string> headers;
  std::string mode = "load";  // ping | load
  long warmup = 0;
  long count = 0;         // 0 = unbounded (then --duration bounds the run)
  int concurrency = 1;
  double duration = 0;    // seconds; 0 = none
  double timeout = 30;    // per request, seconds
  bool samples = false;   // include raw per-request samples in the JSON
  std::string label;
  bool tls = false;              // https:// URL
  std::string cacert;            // --cacert: verify the server against this CA file
  bool insecure = false;         // --insecure: no verification at all
  std::string tls_version;       // --tls 1.2|1.3: only that version (default: either, 1.3 preferred)
  bool conn_per_request = false; // a new connection (and TLS handshake) for every request
  bool prime = false;            // load mode: every connection does one unrecorded request first
  std::vector<int> watch_proxy, watch_mock;  // pids whose CPU / RSS is read at the run's edges
};

[[noreturn]] void usage(const char* msg) {
  if (msg) std::fprintf(stderr, "sluice_loadgen: %s\n", msg);
  std::fprintf(stderr,
      "usage: sluice_loadgen --url http[s]://HOST:PORT[/PATH] [options]\n"
      "  --mode ping|load        ping: sequential on one connection; load: concurrent (default load)\n"
      "  --warmup N              unrecorded requests first (default 0)\n"
      "  --count N               stop after N recorded requests\n"
      "  --concurrency N         connections in load mode (default 1; ping forces 1)\n"
      "  --duration S            stop issuing requests after S seconds (load mode)\n"
      "  --timeout S             per-request timeout (default 30)\n"
      "  --path P                request path (default /v1/chat/completions)\n"
      "  --model M               model in the JSON body (default gpt-4o-mini)\n"
      "  --stream 0|1            \"stream\" flag in the body; 1 also requires data: [DONE] (default 1)\n"
      "  --body-file PATH        send this file's bytes as the request body instead of the built-in\n"
      "                          one (--model and --content are then unused; --stream still sets\n"
      "                          Accept and the data: [DONE] check, so make it match the file)\n"
      "  -H, --header 'K: V'     extra request header (repeatable)\n"
      "  --label NAME            copied into the JSON output\n"
      "  --samples               include raw ttfb/close samples (ms) in the output\n"
      "  --cacert FILE           https: verify the server's certificate against this CA\n"
      "  --insecure              https: do not verify the server's certificate\n"
      "                          (neither: the system's trust store)\n"
      "  --tls 1.2|1.3           https: only this TLS version (default: either, 1.3 preferred)\n"
      "  --conn-per-request      a new connection (and TLS handshake) per request, sent with\n"
      "                          Connection: close; TTFB and close then include connect + handshake\n"
      "  --prime                 load mode: every connection does one unrecorded request (connect,\n"
      "                          handshake, the proxy's upstream connection) before the clock starts\n"
      "  --watch-proxy PID,...   read these processes' CPU (utime+stime) when the measured requests\n"
      "  --watch-mock PID,...    start and end, and the proxy's summed VmRSS every 200 ms; reported\n"
      "                          under \"watch\" with the machine's busy CPU over the same span\n");
  std::exit(2);
}

// "12,34 56": the pids in a comma- or space-separated list
std::vector<int> parse_pids(const std::string& list) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < list.size()) {
    if (list[i] == ',' || list[i] == ' ') { ++i; continue; }
    char* end = nullptr;
    long v = std::strtol(list.c_str() + i, &end, 10);
    if (end == list.c_str() + i || v <= 0) usage("bad pid list");
    out.push_back(static_cast<int>(v));
    i = static_cast<std::size_t>(end - list.c_str());
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  Options o;
  bool have_url = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--url") {
      std::string u = next();
      o.tls = u.rfind("https://", 0) == 0;
      if (u.rfind("http://", 0) == 0) u = u.substr(7);
      else if (o.tls) u = u.substr(8);
      else if (u.find("://") != std::string::npos) usage("only http:// and https:// URLs are supported");
      auto slash = u.find('/');
      std::string hp = u.substr(0, slash);
      if (slash != std::string::npos && u.size() > slash + 1) o.path = u.substr(slash);
      auto colon = hp.rfind(':');
      if (colon == std::string::npos) { o.host = hp; o.port = o.tls ? "443" : "80"; }
      else { o.host = hp.substr(0, colon); o.port = hp.substr(colon + 1); }
      have_url = true;
    } else if (a == "--host") { o.host = next(); have_url = true; }
    else if (a == "--port") { o.port = next(); have_url = true; }
    else if (a == "--path") o.path = next();
    else if (a == "--model") o.model = next();
    else if (a == "--content") o.content = next();
    else if (a == "--body-file") {
      auto path = next();
      std::ifstream in(path, std::ios::binary);
      if (!in) usage(("cannot read --body-file " + path).c_str());
      o.body = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    else if (a == "--stream") { auto v = next(); o.stream = !(v == "0" || v == "false" || v == "no"); }
    else if (a == "-H" || a == "--header") {
      auto h = next();
      if (h.find(':') == std::string::npos) usage("header must be 'Name: value'");
      o.headers.push_back(h);
    }
    else if (a == "--mode") { o.mode = next(); if (o.mode != "ping" && o.mode != "load") usage("bad --mode"); }
    else if (a == "--warmup") o.warmup = std::stol(next());
    else if (a == "--count") o.count = std::stol(next());
    else if (a == "--concurrency" || a == "-c") o.concurrency = std::stoi(next());
    else if (a == "--duration" || a == "-d") o.duration = std::stod(next());
    else if (a == "--timeout") o.timeout = std::stod(next());
    else if (a == "--label") o.label = next();
    else if (a == "--samples") o.samples = true;
    else if (a == "--cacert") o.cacert = next();
    else if (a == "--insecure") o.insecure = true;
    else if (a == "--tls") { o.tls_version = next(); if (o.tls_version != "1.2" && o.tls_version != "1.3") usage("bad --tls"); }
    else if (a == "--conn-per-request") o.conn_per_request = true;
    else if (a == "--prime") o.prime = true;
    else if (a == "--watch-proxy") o.watch_proxy = parse_pids(next());
    else if (a == "--watch-mock") o.watch_mock = parse_pids(next());
    else if (a == "-h" || a == "--help") usage(nullptr);
    else usage(("unknown argument " + a).c_str());
  }
  if (!have_url) usage("--url is required");
  if (o.mode == "ping") {
    o.concurrency = 1;
    if (o.count <= 0 && o.duration <= 0) o.count = 30;
  }
  if (o.concurrency < 1) usage("--concurrency must be >= 1");
  if (o.count <= 0 && o.duration <= 0) usage("a run needs --count or --duration");
  if (!o.tls && (!o.cacert.empty() || o.insecure || !o.tls_version.empty()))
    usage("--cacert, --insecure and --tls need an https:// URL");
  return o;
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", ch);
          out += b;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string build_request(const Options& o) {
  std::string body = o.body ? *o.body
                            : "{\"model\":\"" + json_escape(o.model) + "\",\"stream\":" +
                                  (o.stream ? "true" : "false") +
                                  ",\"messages\":[{\"role\":\"user\",\"content\":\"" +
                                  json_escape(o.content) + "\"}]}";
  std::string req;
  req.reserve(512 + body.size());
  req += "POST " + o.path + " HTTP/1.1\r\n";
  req += "Host: " + o.host + ":" + o.port + "\r\n";
  req += "Content-Type: application/json\r\n";
  if (o.stream) req += "Accept: text/event-stream\r\n";
  if (o.conn_per_request) req += "Connection: close\r\n";
  for (const auto& h : o.headers) req += h + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  req += body;
  return req;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// ---------------------------------------------------------------------------

// What both connection types hold besides the stream: the response buffer and the timeout.
struct ConnState {
  explicit ConnState(asio::io_context& io) : timer(io), buf(kBufCap) {}
  asio::steady_timer timer;
  std::vector<char> buf;
  std::size_t beg = 0, end = 0;
  bool open = false;
  bool timed_out = false;
  Clock::time_point last_read{};
};

struct PlainConn : ConnState {
  explicit PlainConn(asio::io_context& io) : ConnState(io), sock(io) {}
  tcp::socket sock;
  tcp::socket& stream() { return sock; }
  tcp::socket& socket() { return sock; }
  bool has_socket() const { return true; }
};

// The ssl::stream is made anew for every connection (an SSL object is not reusable after a
// close); it is empty until the first connect.
struct TlsConn : ConnState {
  explicit TlsConn(asio::io_context& io) : ConnState(io) {}
  std::optional<ssl::stream<tcp::socket>> tls;
  ssl::stream<tcp::socket>& stream() { return *tls; }
  tcp::socket& socket() { return tls->next_layer(); }
  bool has_socket() const { return tls.has_value(); }
};

struct Result {
  int status = 0;
  bool done_seen = false;
  bool error_seen = false;
  bool keep_alive = true;
  bool got_body = false;
  bool got_response_bytes = false;
  bool timed_out = false;
  error_code ec;
  std::string error;  // parse error text, if any
  Clock::time_point start{}, first_byte{}, end{};
  std::size_t body_bytes = 0;
  // carry-over for finding kDone across chunk boundaries
  char carry[16] = {};
  std::size_t carry_len = 0;
};

// CPU seconds (utime+stime, all threads) of processes from /proc/PID/stat; a process that is
// gone counts 0.
double proc_cpu_s(const std::vector<int>& pids) {
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  for (int pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    auto paren = line.rfind(')');  // the command name may hold spaces and parentheses
    if (paren == std::string::npos) continue;
    std::vector<std::string_view> f;
    std::string_view rest(line);
    rest.remove_prefix(paren + 1);
    while (!rest.empty() && f.size() < 13) {
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      auto sp = rest.find(' ');
      f.push_back(rest.substr(0, sp));
      rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp);
    }
    if (f.size() < 13) continue;  // f[0] is field 3 (state): utime is field 14, stime 15
    total += static_cast<double>(std::strtoull(std::string(f[11]).c_str(), nullptr, 10) +
                                 std::strtoull(std::string(f[12]).c_str(), nullptr, 10)) / hz;
  }
  return total;
}

// CPU seconds the whole machine has been busy (user+nice+system+irq+softirq+steal, all cores).
double machine_cpu_s() {
  static const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  return static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
}

long proc_rss_kb(const std::vector<int>& pids) {
  long total = 0;
  for (int pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmRSS:", 0) == 0) { total += std::strtol(line.c_str() + 6, nullptr, 10); break; }
  }
  return total;
}

// --watch-proxy / --watch-mock: CPU read where the measured requests start and end (so that
// warm-up, priming and process start-up stay out of it), the proxy's RSS sampled in between.
struct Watch {
  bool enabled = false, running = false, done = false;
  std::vector<int> proxy, mock;
  double proxy0 = 0, mock0 = 0, machine0 = 0;
  double proxy_s = 0, mock_s = 0, machine_s = 0;
  Clock::time_point t0{};
  double wall_s = 0;
  long rss_max_kb = 0, rss_end_kb = 0;
  void start() {
    if (!enabled) return;
    proxy0 = proc_cpu_s(proxy);
    mock0 = proc_cpu_s(mock);
    machine0 = machine_cpu_s();
    t0 = Clock::now();
    rss_max_kb = proc_rss_kb(proxy);
    running = true;
  }
  void sample() {
    if (running) rss_max_kb = std::max(rss_max_kb, proc_rss_kb(proxy));
  }
  void stop() {
    if (!running) return;
    proxy_s = proc_cpu_s(proxy) - proxy0;
    mock_s = proc_cpu_s(mock) - mock0;
    machine_s = machine_cpu_s() - machine0;
    wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    rss_end_kb = proc_rss_kb(proxy);
    rss_max_kb = std::max(rss_max_kb, rss_end_kb);
    running = false;
    done = true;
  }
};

struct Shared {
  Options opt;
  std::string request;
  tcp::resolver::results_type endpoints;
  ssl::context* tls_ctx = nullptr;  // https only
  long prime_failed = 0;
  std::map<std::string, long> prime_errors;
  std::string tls_version, tls_cipher, tls_group;  // what the first handshake negotiated
  long handshake_errors = 0;
  Clock::time_point deadline{};
  Clock::time_point started{};
  Clock::time_point finished{};
  long issued = 0;
  long recorded = 0;
  int active_workers = 0;
  // results
  std::vector<double> ttfb, close, tail;
  std::vector<double> fail_close;
  long ok = 0, failed = 0, timeouts = 0, connects = 0, stale_retries = 0, conn_errors = 0;
  long long body_bytes = 0;
  std::map<std::string, long> by_status;
  std::map<std::string, long> errors;
  Watch watch;
};

// The measured requests start now: the clock, the --duration deadline and the watched CPU.
void start_clock(Shared& sh) {
  sh.started = Clock::now();
  if (sh.opt.duration > 0)
    sh.deadline = sh.started + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(sh.opt.duration));
  sh.watch.start();
}

void consume_body(Result& r, const char* p, std::size_t n, Clock::time_point t) {
  if (n == 0) return;
  if (!r.got_body) {
    r.got_body = true;
    r.first_byte = t;
  }
  r.body_bytes += n;
  if (r.done_seen) return;
  std::string_view piece(p, n);
  auto scan = [&r](std::string_view s) {
    if (s.find(kErrorEvent) != std::string_view::npos) r.error_seen = true;
    if (s.find(kDone) != std::string_view::npos) r.done_seen = true;
  };
  // boundary: carry + first bytes of the piece
  if (r.carry_len) {
    char tmp[32];
    std::size_t take = std::min(n, kCarry);
    std::memcpy(tmp, r.carry, r.carry_len);
    std::memcpy(tmp + r.carry_len, p, take);
    scan(std::string_view(tmp, r.carry_len + take));
  }
  scan(piece);
  if (r.done_seen) return;
  // new carry: the last kCarry bytes of carry+piece
  const std::size_t keep = kCarry;
  if (n >= keep) {
    std::memcpy(r.carry, p + n - keep, keep);
    r.carry_len = keep;
  } else {
    char tmp[32];
    std::memcpy(tmp, r.carry, r.carry_len);
    std::memcpy(tmp + r.carry_len, p, n);
    std::size_t total = r.carry_len + n;
    std::size_t k = std::min(total, keep);
    std::memcpy(r.carry, tmp + total - k, k);
    r.carry_len = k;
  }
}

// Reads more bytes into the connection buffer. Returns an error on EOF/failure.
template <class Conn>
asio::awaitable<error_code> fill(Conn& c) {
  if (c.beg == c.end) {
    c.beg = c.end = 0;
  } else if (c.end == c.buf.size()) {
    if (c.beg == 0) co_return asio::error::message_size;  // a line longer than the buffer
    std::memmove(c.buf.data(), c.buf.data() + c.beg, c.end - c.beg);
    c.end -= c.beg;
    c.beg = 0;
  }
  auto [ec, n] = co_await c.stream().async_read_some(
      asio::buffer(c.buf.data() + c.end, c.buf.size() - c.end), kAwait);
  c.last_read = Clock::now();
  if (ec) co_return ec;
  c.end += n;
  co_return error_code{};
}

std::size_t find_crlf(const ConnState& c, std::size_t from) {
  std::string_view v(c.buf.data() + from, c.end - from);
  auto p = v.find("\r\n");
  return p == std::string_view::npos ? std::string_view::npos : from + p;
}

// Parses one response from the connection. Sets r.ec / r.error on failure.
template <class Conn>
asio::awaitable<void> read_response(Conn& c, Result& r) {
  bool chunked = false;
  std::optional<std::size_t> content_length;
  for (;;) {  // loop over 1xx interim responses
    // --- status line and headers
    std::size_t hdr_end;
    for (;;) {
      std::string_view v(c.buf.data() + c.beg, c.end - c.beg);
      auto p = v.find("\r\n\r\n");
      if (p != std::string_view::npos) { hdr_end = c.beg + p; break; }
      if (c.end > c.beg) r.got_response_bytes = true;
      if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
    }
    r.got_response_bytes = true;
    std::string_view head(c.buf.data() + c.beg, hdr_end - c.beg);
    c.beg = hdr_end + 4;
    auto eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/") {
      r.error = "bad status line";
      co_return;
    }
    r.status = std::atoi(std::string(status_line.substr(9, 3)).c_str());
    r.keep_alive = status_line.substr(0, 8) != "HTTP/1.0";
    chunked = false;
    content_length.reset();
    std::string_view rest = eol == std::string_view::npos ? std::string_view{} : head.substr(eol + 2);
    while (!rest.empty()) {
      auto e = rest.find("\r\n");
      std::string_view line = rest.substr(0, e);
      rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e + 2);
      auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = trim(line.substr(0, colon));
      std::string_view value = trim(line.substr(colon + 1));
      if (iequals(name, "content-length")) content_length = std::strtoull(std::string(value).c_str(), nullptr, 10);
      else if (iequals(name, "transfer-encoding")) chunked = icontains(value, "chunked");
      else if (iequals(name, "connection")) {
        if (icontains(value, "close")) r.keep_alive = false;
        else if (icontains(value, "keep-alive")) r.keep_alive = true;
      }
    }
    if (r.status >= 100 && r.status < 200) continue;
    break;
  }

  const Clock::time_point t_headers = c.last_read;
  if (r.status == 204 || r.status == 304) {
    r.end = t_headers;
    co_return;
  }

  if (chunked) {
    for (;;) {
      std::size_t pos;
      while ((pos = find_crlf(c, c.beg)) == std::string_view::npos)
        if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
      std::string_view line(c.buf.data() + c.beg, pos - c.beg);
      c.beg = pos + 2;
      unsigned long long size = 0;
      std::size_t digits = 0;
      for (char ch : line) {
        int d;
        if (ch >= '0' && ch <= '9') d = ch - '0';
        else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
        else break;  // ';' extensions or whitespace
        size = size * 16 + static_cast<unsigned>(d);
        if (++digits > 15) break;
      }
      if (digits == 0 || digits > 15) { r.error = "bad chunk size"; co_return; }
      if (size == 0) {
        for (;;) {  // trailers up to the empty line
          while ((pos = find_crlf(c, c.beg)) == std::string_view::npos)
            if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
          bool empty = pos == c.beg;
          c.beg = pos + 2;
          if (empty) break;
        }
        break;
      }
      while (size > 0) {
        if (c.beg == c.end)
          if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
        std::size_t n = std::min<std::size_t>(size, c.end - c.beg);
        consume_body(r, c.buf.data() + c.beg, n, c.last_read);
        c.beg += n;
        size -= n;
      }
      while (c.end - c.beg < 2)
        if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
      if (c.buf[c.beg] != '\r' || c.buf[c.beg + 1] != '\n') { r.error = "bad chunk terminator"; co_return; }
      c.beg += 2;
    }
  } else if (content_length) {
    std::size_t left = *content_length;
    while (left > 0) {
      if (c.beg == c.end)
        if (auto ec = co_await fill(c)) { r.ec = ec; co_return; }
      std::size_t n = std::min(left, c.end - c.beg);
      consume_body(r, c.buf.data() + c.beg, n, c.last_read);
      c.beg += n;
      left -= n;
    }
  } else {
    // body delimited by connection close
    r.keep_alive = false;
    for (;;) {
      if (c.beg < c.end) {
        consume_body(r, c.buf.data() + c.beg, c.end - c.beg, c.last_read);
        c.beg = c.end;
      }
      auto ec = co_await fill(c);
      // a TLS peer that closes without close_notify ends the body the same way
      if (ec == asio::error::eof || ec == ssl::error::stream_truncated) break;
      if (ec) { r.ec = ec; co_return; }
    }
  }
  r.end = c.last_read;
  if (!r.got_body) r.first_byte = r.end;
  // Anything left over would be a protocol error or pipelining; we do neither.
  c.beg = c.end = 0;
}

// Closes the TCP connection. A TLS connection is dropped without close_notify: the client is
// done with it, and waiting for the server's reply would only add a round trip to the run.
template <class Conn>
void close_conn(Conn& c) {
  c.open = false;
  c.beg = c.end = 0;
  if (!c.has_socket()) return;
  error_code ignored;
  c.socket().shutdown(tcp::socket::shutdown_both, ignored);
  c.socket().close(ignored);
}

asio::awaitable<error_code> connect(std::shared_ptr<PlainConn> c, Shared& sh) {
  c->sock = tcp::socket(c->sock.get_executor());
  auto [ec, ep] = co_await asio::async_connect(c->sock, sh.endpoints, kAwait);
  if (ec) co_return ec;
  c->sock.set_option(tcp::no_delay(true));
  c->open = true;
  c->beg = c->end = 0;
  ++sh.connects;
  co_return error_code{};
}

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

asio::awaitable<error_code> connect(std::shared_ptr<TlsConn> c, Shared& sh) {
  c->tls.emplace(c->timer.get_executor(), *sh.tls_ctx);
  auto [ec, ep] = co_await asio::async_connect(c->tls->next_layer(), sh.endpoints, kAwait);
  if (ec) co_return ec;
  c->tls->next_layer().set_option(tcp::no_delay(true));
  SSL* ssl = c->tls->native_handle();
  // SNI carries names only (RFC 6066); verification checks an IP literal against the SAN's IPs.
  if (!is_ip_literal(sh.opt.host)) SSL_set_tlsext_host_name(ssl, sh.opt.host.c_str());
  if (!sh.opt.insecure) c->tls->set_verify_callback(ssl::host_name_verification(sh.opt.host));
  auto [hec] = co_await c->tls->async_handshake(ssl::stream_base::client, kAwait);
  ++sh.connects;
  if (hec) {
    ++sh.handshake_errors;
    co_return hec;
  }
  if (sh.tls_version.empty()) {
    sh.tls_version = SSL_get_version(ssl);
    sh.tls_cipher = SSL_get_cipher_name(ssl);
    const char* group = SSL_group_to_name(ssl, SSL_get_negotiated_group(ssl));
    sh.tls_group = group ? group : "";
  }
  c->open = true;
  c->beg = c->end = 0;
  co_return error_code{};
}

// One request, reconnecting as needed. A request on a reused keep-alive
// connection that fails before any response byte (the server closed it idle)
// is retried once on a fresh connection.
template <class Conn>
asio::awaitable<void> one_request(std::shared_ptr<Conn> c, Shared& sh, Result& r) {
  r.start = Clock::now();
  c->timed_out = false;
  c->timer.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(sh.opt.timeout)));
  c->timer.async_wait([c](error_code ec) {
    if (!ec) {
      c->timed_out = true;
      error_code ignored;
      if (c->has_socket()) c->socket().close(ignored);
    }
  });
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = !c->open;
    if (!c->open) {
      if (auto ec = co_await connect(c, sh)) {
        r.ec = ec;
        break;
      }
    }
    auto [wec, wn] = co_await asio::async_write(c->stream(), asio::buffer(sh.request), kAwait);
    if (!wec) co_await read_response(*c, r);
    else r.ec = wec;
    if ((r.ec || !r.error.empty()) && !fresh && !r.got_response_bytes && !c->timed_out) {
      close_conn(*c);
      auto start = r.start;
      r = Result{};
      r.start = start;
      ++sh.stale_retries;
      continue;
    }
    break;
  }
  c->timer.cancel();
  r.timed_out = c->timed_out;
  if (r.ec || !r.error.empty() || !r.keep_alive || sh.opt.conn_per_request) close_conn(*c);
}

void record(Shared& sh, const Result& r) {
  ++sh.recorded;
  if (r.ec || !r.error.empty()) {
    ++sh.failed;
    if (r.timed_out) { ++sh.timeouts; ++sh.errors["timeout"]; }
    else { ++sh.conn_errors; ++sh.errors[r.ec ? r.ec.message() : r.error]; }
    if (r.status) ++sh.by_status[std::to_string(r.status)];
    else ++sh.by_status["error"];
    return;
  }
  ++sh.by_status[std::to_string(r.status)];
  sh.body_bytes += static_cast<long long>(r.body_bytes);
  bool ok = r.status >= 200 && r.status < 300 && (!sh.opt.stream || (r.done_seen && !r.error_seen));
  if (!ok) {
    ++sh.failed;
    if (r.status >= 200 && r.status < 300) ++sh.errors["no [DONE] in stream"];
    sh.fail_close.push_back(ms_between(r.start, r.end));
    return;
  }
  ++sh.ok;
  double t = ms_between(r.start, r.first_byte);
  double cl = ms_between(r.start, r.end);
  sh.ttfb.push_back(t);
  sh.close.push_back(cl);
  sh.tail.push_back(cl - t);
}

bool may_issue(Shared& sh) {
  if (sh.opt.count > 0 && sh.issued >= sh.opt.count) return false;
  if (sh.opt.duration > 0 && Clock::now() >= sh.deadline) return false;
  ++sh.issued;
  return true;
}

template <class Conn>
asio::awaitable<void> worker(std::shared_ptr<Conn> c, Shared& sh, bool do_warmup) {
  if (do_warmup) {
    for (long i = 0; i < sh.opt.warmup; ++i) {
      Result r;
      co_await one_request(c, sh, r);
    }
    // warm-up connects are not counted against the measured run
    sh.connects = c->open ? 0 : sh.connects;
    sh.stale_retries = 0;
    start_clock(sh);
  }
  while (may_issue(sh)) {
    Result r;
    co_await one_request(c, sh, r);
    record(sh, r);
  }
  // the last response is in: CPU is read before the connections close (their teardown is
  // the same for every target and not the cost of a request)
  if (sh.active_workers == 1) sh.watch.stop();
  close_conn(*c);
  if (--sh.active_workers == 0) sh.finished = Clock::now();
}

// --prime: one unrecorded request on a connection that the measured run then reuses.
template <class Conn>
asio::awaitable<void> prime_one(std::shared_ptr<Conn> c, Shared& sh) {
  Result r;
  co_await one_request(c, sh, r);
  if (r.ec || !r.error.empty() || r.status < 200 || r.status >= 300) {
    ++sh.prime_failed;
    ++sh.prime_errors[r.timed_out ? "timeout" : r.ec ? r.ec.message() : !r.error.empty() ? r.error : "status " + std::to_string(r.status)];
  }
}

// The proxy's RSS every 200 ms while the measured requests run.
asio::awaitable<void> rss_sampler(Shared& sh) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  while (!sh.watch.done) {
    t.expires_after(std::chrono::milliseconds(200));
    co_await t.async_wait(kAwait);
    sh.watch.sample();
  }
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::size_t k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  if (k == 0) k = 1;
  if (k > v.size()) k = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k - 1), v.end());
  return v[k - 1];
}

std::string fmt_num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4f", x);
  return b;
}

std::string stats_json(std::vector<double> v) {
  double mean = 0, mx = 0, mn = 0;
  if (!v.empty()) {
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    mx = *std::max_element(v.begin(), v.end());
    mn = *std::min_element(v.begin(), v.end());
  }
  std::string s = "{";
  s += "\"min\":" + fmt_num(mn);
  s += ",\"mean\":" + fmt_num(mean);
  s += ",\"p50\":" + fmt_num(percentile(v, 50));
  s += ",\"p90\":" + fmt_num(percentile(v, 90));
  s += ",\"p95\":" + fmt_num(percentile(v, 95));
  s += ",\"p99\":" + fmt_num(percentile(v, 99));
  s += ",\"max\":" + fmt_num(mx);
  s += "}";
  return s;
}

std::string array_json(const std::vector<double>& v) {
  std::string s = "[";
  char b[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(b, sizeof b, "%s%.4f", i ? "," : "", v[i]);
    s += b;
  }
  return s + "]";
}

// The run over one connection type: warm-up, priming, the measured requests, the JSON.
template <class Conn>
int run(asio::io_context& io, Shared& sh) {
  const Options& opt = sh.opt;
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  auto on_done = [](const std::exception_ptr& e) {
    if (e) {
      try { std::rethrow_exception(e); }
      catch (const std::exception& ex) { std::fprintf(stderr, "sluice_loadgen: worker failed: %s\n", ex.what()); }
    }
  };
  sh.watch.enabled = !opt.watch_proxy.empty() || !opt.watch_mock.empty();
  sh.watch.proxy = opt.watch_proxy;
  sh.watch.mock = opt.watch_mock;
  if (opt.mode == "ping") {
    start_clock(sh);
    sh.active_workers = 1;
    auto c = std::make_shared<Conn>(io);
    asio::co_spawn(io, worker(c, sh, opt.warmup > 0), on_done);
  } else {
    // Warm-up in load mode: --warmup runs N unrecorded requests on one connection first.
    if (opt.warmup > 0) {
      Shared wsh;
      wsh.opt = opt;
      wsh.opt.count = opt.warmup;
      wsh.opt.duration = 0;
      wsh.request = sh.request;
      wsh.endpoints = sh.endpoints;
      wsh.tls_ctx = sh.tls_ctx;
      wsh.active_workers = 1;
      auto c = std::make_shared<Conn>(io);
      asio::co_spawn(io, worker(c, wsh, false), on_done);
      io.run();
      io.restart();
    }
    std::vector<std::shared_ptr<Conn>> conns;
    conns.reserve(static_cast<std::size_t>(opt.concurrency));
    for (int i = 0; i < opt.concurrency; ++i) conns.push_back(std::make_shared<Conn>(io));
    if (opt.prime && !opt.conn_per_request) {
      for (auto& c : conns) asio::co_spawn(io, prime_one(c, sh), on_done);
      io.run();
      io.restart();
      sh.connects = 0;  // the measured run's connects are reconnects only
      sh.stale_retries = 0;
      sh.handshake_errors = 0;
    }
    sh.active_workers = opt.concurrency;
    start_clock(sh);
    for (auto& c : conns) asio::co_spawn(io, worker(c, sh, false), on_done);
  }
  if (sh.watch.enabled) asio::co_spawn(io, rss_sampler(sh), on_done);
  io.run();
  if (sh.finished == Clock::time_point{}) sh.finished = Clock::now();
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  double cpu_user = tv(ru1.ru_utime) - tv(ru0.ru_utime);
  double cpu_sys = tv(ru1.ru_stime) - tv(ru0.ru_stime);

  double elapsed = std::chrono::duration<double>(sh.finished - sh.started).count();
  std::string out = "{";
  out += "\"label\":\"" + json_escape(opt.label) + "\"";
  out += std::string(",\"target\":\"") + (opt.tls ? "https" : "http") + "://" + json_escape(opt.host) + ":" +
         json_escape(opt.port) + json_escape(opt.path) + "\"";
  out += ",\"mode\":\"" + opt.mode + "\"";
  out += ",\"concurrency\":" + std::to_string(opt.concurrency);
  out += ",\"warmup\":" + std::to_string(opt.warmup);
  out += ",\"stream\":" + std::string(opt.stream ? "true" : "false");
  out += ",\"requests\":" + std::to_string(sh.recorded);
  out += ",\"ok\":" + std::to_string(sh.ok);
  out += ",\"failed\":" + std::to_string(sh.failed);
  out += ",\"timeouts\":" + std::to_string(sh.timeouts);
  out += ",\"by_status\":{";
  bool first = true;
  for (auto& [k, v] : sh.by_status) {
    out += (first ? "\"" : ",\"") + k + "\":" + std::to_string(v);
    first = false;
  }
  out += "},\"errors\":{";
  first = true;
  for (auto& [k, v] : sh.errors) {
    out += (first ? "\"" : ",\"") + json_escape(k) + "\":" + std::to_string(v);
    first = false;
  }
  out += "}";
  out += ",\"connects\":" + std::to_string(sh.connects);
  out += ",\"stale_retries\":" + std::to_string(sh.stale_retries);
  if (opt.prime) {
    out += ",\"primed\":" + std::to_string(opt.concurrency) + ",\"prime_failed\":" + std::to_string(sh.prime_failed);
    out += ",\"prime_errors\":{";
    first = true;
    for (auto& [k, v] : sh.prime_errors) {
      out += (first ? "\"" : ",\"") + json_escape(k) + "\":" + std::to_string(v);
      first = false;
    }
    out += "}";
  }
  if (opt.conn_per_request) out += ",\"conn_per_request\":true";
  if (opt.tls) {
    out += ",\"tls\":{\"version\":\"" + json_escape(sh.tls_version) + "\",\"cipher\":\"" + json_escape(sh.tls_cipher) +
           "\",\"group\":\"" + json_escape(sh.tls_group) + "\",\"verify\":" + (opt.insecure ? "false" : "true") +
           ",\"handshake_errors\":" + std::to_string(sh.handshake_errors) + "}";
  }
  out += ",\"body_bytes\":" + std::to_string(sh.body_bytes);
  out += ",\"elapsed_s\":" + fmt_num(elapsed);
  out += ",\"rps\":" + fmt_num(elapsed > 0 ? static_cast<double>(sh.recorded) / elapsed : 0);
  out += ",\"ok_rps\":" + fmt_num(elapsed > 0 ? static_cast<double>(sh.ok) / elapsed : 0);
  out += ",\"ttfb_ms\":" + stats_json(sh.ttfb);
  out += ",\"close_ms\":" + stats_json(sh.close);
  out += ",\"tail_ms\":" + stats_json(sh.tail);
  out += ",\"client_cpu_user_s\":" + fmt_num(cpu_user);
  out += ",\"client_cpu_sys_s\":" + fmt_num(cpu_sys);
  out += ",\"client_cpu_s\":" + fmt_num(cpu_user + cpu_sys);
  if (sh.watch.done) {
    out += ",\"watch\":{\"wall_s\":" + fmt_num(sh.watch.wall_s) + ",\"proxy_cpu_s\":" + fmt_num(sh.watch.proxy_s) +
           ",\"mock_cpu_s\":" + fmt_num(sh.watch.mock_s) + ",\"machine_cpu_s\":" + fmt_num(sh.watch.machine_s) +
           ",\"proxy_rss_max_kb\":" + std::to_string(sh.watch.rss_max_kb) +
           ",\"proxy_rss_end_kb\":" + std::to_string(sh.watch.rss_end_kb) + "}";
  }
  if (opt.samples) {
    out += ",\"samples\":{\"ttfb_ms\":" + array_json(sh.ttfb) + ",\"close_ms\":" + array_json(sh.close) + "}";
  }
  out += "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return sh.recorded > 0 && sh.ok == 0 ? 3 : 0;
}

// Thousands of connections need as many descriptors: the soft limit goes up to the hard one.
void raise_fd_limit(int concurrency) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(concurrency) + 64;
  if (rl.rlim_cur >= want) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < want)
    std::fprintf(stderr, "sluice_loadgen: warning: the open-file limit (%llu) is below --concurrency + 64\n",
                 static_cast<unsigned long long>(rl.rlim_cur));
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse_args(argc, argv);
  raise_fd_limit(opt.concurrency);
  asio::io_context io(1);
  Shared sh;
  sh.opt = opt;
  sh.request = build_request(opt);
  try {
    tcp::resolver resolver(io);
    sh.endpoints = resolver.resolve(opt.host, opt.port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice_loadgen: cannot resolve %s:%s: %s\n", opt.host.c_str(), opt.port.c_str(), e.what());
    return 1;
  }
  if (!opt.tls) return run<PlainConn>(io, sh);

  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX* raw = ctx.native_handle();
  SSL_CTX_set_min_proto_version(raw, opt.tls_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(raw, opt.tls_version == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION);
  // every connection does a full handshake: nothing is resumed
  SSL_CTX_set_session_cache_mode(raw, SSL_SESS_CACHE_OFF);
  error_code ec;
  if (opt.insecure) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_verify_mode(ssl::verify_peer);
    if (!opt.cacert.empty()) ctx.load_verify_file(opt.cacert, ec);
    else ctx.set_default_verify_paths(ec);
    if (ec) {
      std::fprintf(stderr, "sluice_loadgen: cannot load the CA (%s): %s\n",
                   opt.cacert.empty() ? "system trust store" : opt.cacert.c_str(), ec.message().c_str());
      return 1;
    }
  }
  sh.tls_ctx = &ctx;
  return run<TlsConn>(io, sh);
}
