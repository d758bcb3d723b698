#include "StoreTestSupport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <stdexcept>

#include "store/SqlConnection.hpp"
#include "store/postgres/LibPq.hpp"

namespace sluice::store::testing {

std::string backendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::Sqlite ? "Sqlite" : "Postgres";
}

namespace {

const char* postgresUrl() {
  const char* u = std::getenv("SLUICE_TEST_POSTGRES_URL");
  return u && *u ? u : nullptr;
}

std::string withOption(const std::string& url, const std::string& kv) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + kv;
}

std::string conninfoValue(const char* url, const char* key) {
  char* err = nullptr;
  PQconninfoOption* opts = sluice::store::libpq().PQconninfoParse(url, &err);
  if (!opts) {
    std::string msg = err ? err : "?";
    sluice::store::libpq().PQfreemem(err);
    throw std::runtime_error("bad SLUICE_TEST_POSTGRES_URL: " + msg);
  }
  std::string out;
  for (auto* o = opts; o->keyword; ++o)
    if (std::string(o->keyword) == key && o->val) out = o->val;
  sluice::store::libpq().PQconninfoFree(opts);
  return out;
}

}  // namespace

void requireBackend(Backend backend) {
  if (backend != Backend::Postgres || postgresUrl()) return;
  const char* no_pg = std::getenv("SLUICE_TEST_NO_POSTGRES");
  if (no_pg && std::string(no_pg) == "1") {
    std::cerr << "\n*** NOTE: SLUICE_TEST_NO_POSTGRES=1: the PostgreSQL store tests are SKIPPED. ***\n"
                 "*** Run them under tests/scripts/with-postgres.sh <command>.                 ***\n\n";
    GTEST_SKIP() << "SLUICE_TEST_NO_POSTGRES=1: PostgreSQL tests skipped on request";
  }
  FAIL() << "SLUICE_TEST_POSTGRES_URL is unset, so the PostgreSQL store cannot be tested. Run the unit tests "
            "under tests/scripts/with-postgres.sh (tests/run.sh does), or set SLUICE_TEST_NO_POSTGRES=1 to "
            "skip PostgreSQL explicitly.";
}

TestDatabase::TestDatabase(Backend backend) : backend_(backend) {
  if (backend == Backend::Sqlite) {
    char tmpl[] = "/tmp/sluice-store-test.XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    url_ = "sqlite://" + dir_ + "/test.db";
    return;
  }
  const char* base = postgresUrl();
  if (!base) throw std::runtime_error("SLUICE_TEST_POSTGRES_URL is unset");
  std::random_device rd;
  schema_ = "t_" + std::to_string(::getpid()) + "_" + std::to_string(rd() % 1000000000u);
  auto admin = openSqlConnection(base);
  admin->execScript("CREATE SCHEMA " + schema_);
  url_ = withOption(base, "options=-csearch_path%3D" + schema_);
}

TestDatabase::~TestDatabase() {
  try {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    if (!schema_.empty()) openSqlConnection(postgresUrl())->execScript("DROP SCHEMA " + schema_ + " CASCADE");
  } catch (const std::exception& e) {
    std::cerr << "TestDatabase cleanup: " << e.what() << "\n";
  }
}

std::string TestDatabase::serverHost() const {
  return conninfoValue(postgresUrl(), "host");
}
int TestDatabase::serverPort() const {
  std::string p = conninfoValue(postgresUrl(), "port");
  return p.empty() ? 5432 : std::stoi(p);
}

std::string TestDatabase::urlVia(int port) const {
  const char* base = postgresUrl();
  std::string user = conninfoValue(base, "user"), pass = conninfoValue(base, "password"),
              db = conninfoValue(base, "dbname");
  std::string auth = user.empty() ? "" : user + (pass.empty() ? "" : ":" + pass) + "@";
  return "postgres://" + auth + "127.0.0.1:" + std::to_string(port) + "/" + db +
         "?connect_timeout=2&options=-csearch_path%3D" + schema_;
}

// ---- TcpGate ----

TcpGate::TcpGate(std::string target_host, int target_port)
    : target_host_(std::move(target_host)), target_port_(target_port) {
  if (::pipe(wake_) != 0) throw std::runtime_error("pipe failed");
  open();
  thread_ = std::thread([this] { loop(); });
}

TcpGate::~TcpGate() {
  request('q');
  thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpGate::open() {
  std::lock_guard lk(mu_);
  if (listen_fd_ >= 0) return;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port_));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    throw std::runtime_error("TcpGate: cannot listen");
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  listen_fd_ = fd;
  if (thread_.joinable()) {
    char c = 'o';
    (void)!::write(wake_[1], &c, 1);
  }
}

void TcpGate::request(char op) {
  int want;
  {
    std::lock_guard lk(mu_);
    want = ++requested_;
  }
  (void)!::write(wake_[1], &op, 1);
  while (acked_.load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void TcpGate::close() {
  request('c');
}

void TcpGate::loop() {
  auto closePair = [](std::pair<int, int>& p) {
    ::shutdown(p.first, SHUT_RDWR);
    ::shutdown(p.second, SHUT_RDWR);
    ::close(p.first);
    ::close(p.second);
  };
  for (;;) {
    std::vector<pollfd> fds;
    int lfd;
    {
      std::lock_guard lk(mu_);
      lfd = listen_fd_;
    }
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({lfd, POLLIN, 0});  // poll ignores a negative fd
    for (auto& p : pairs_) {
      fds.push_back({p.first, POLLIN, 0});
      fds.push_back({p.second, POLLIN, 0});
    }
    const std::size_t polled = pairs_.size();  // pairs accepted below have no pollfd yet
    ::poll(fds.data(), fds.size(), 1000);
    if (fds[0].revents & POLLIN) {
      char op;
      if (::read(wake_[0], &op, 1) == 1) {
        if (op == 'q' || op == 'c') {
          for (auto& p : pairs_) closePair(p);
          pairs_.clear();
          std::lock_guard lk(mu_);
          if (listen_fd_ >= 0) ::close(listen_fd_);
          listen_fd_ = -1;
        }
        if (op == 'q' || op == 'c') acked_.fetch_add(1);
        if (op == 'q') return;
        continue;  // the fd set changed
      }
    }
    if (lfd >= 0 && (fds[1].revents & POLLIN)) {
      int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        int u = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(target_port_));
        ::inet_pton(AF_INET, target_host_.c_str(), &a.sin_addr);
        if (::connect(u, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
          pairs_.emplace_back(c, u);
        } else {
          ::close(c);
          ::close(u);
        }
      }
    }
    std::vector<std::pair<int, int>> keep;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      auto& p = pairs_[i];
      if (i >= polled) {
        keep.push_back(p);
        continue;
      }
      bool dead = false;
      for (int side = 0; side < 2 && !dead; ++side) {
        short ev = fds[2 + 2 * i + side].revents;
        if (!(ev & (POLLIN | POLLHUP | POLLERR))) continue;
        int from = side == 0 ? p.first : p.second, to = side == 0 ? p.second : p.first;
        char buf[65536];
        ssize_t n = ::read(from, buf, sizeof buf);
        if (n <= 0) {
          dead = true;
          break;
        }
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::write(to, buf + off, static_cast<std::size_t>(n - off));
          if (w <= 0) {
            dead = true;
            break;
          }
          off += w;
        }
      }
      if (dead) {
        closePair(p);
      } else {
        keep.push_back(p);
      }
    }
    pairs_ = std::move(keep);
  }
}

LogRecord sampleLog(std::int64_t time_ms, std::string request_id) {
  LogRecord r;
  r.time_ms = time_ms;
  r.request_id = std::move(request_id);
  r.virtual_key_id = 7;
  r.channel = "openai";
  r.upstream_key = "sk-...abcd";
  r.model = "gpt-4o-mini";
  r.status = 200;
  r.attempts = R"([{"channel":"openai","status":200,"error":null}])";
  r.ttfb_ms = 120;
  r.duration_ms = 900;
  r.input_tokens = 10;
  r.output_tokens = 20;
  r.cached_tokens = 2;
  r.cost_usd = 0.000125;
  r.client_addr = "127.0.0.1";
  r.user_agent = "openai-node/4.0";
  r.stream = true;
  return r;
}

void refuseLogsWithRequestId(const TestDatabase& db, const std::string& request_id) {
  auto c = openSqlConnection(db.url());
  // request_id is a test constant, never input: quoting it inline is safe here.
  if (db.backend() == Backend::Sqlite) {
    c->execScript("CREATE TRIGGER refuse_" + request_id + " BEFORE INSERT ON request_logs WHEN NEW.request_id = '" +
                  request_id + "' BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END");
  } else {
    c->execScript("CREATE FUNCTION refuse_" + request_id +
                  "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.request_id = '" + request_id +
                  "' THEN RAISE EXCEPTION 'refused by test trigger' USING ERRCODE = 'check_violation'; END IF; "
                  "RETURN NEW; END $$; CREATE TRIGGER refuse_" +
                  request_id + " BEFORE INSERT ON request_logs FOR EACH ROW EXECUTE FUNCTION refuse_" + request_id +
                  "()");
  }
}

}  // namespace sluice::store::testing
