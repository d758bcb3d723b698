#include "store/postgres/PostgresConnection.hpp"

#include "store/postgres/LibPq.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::store {
namespace {

bool validUtf8AndNoNul(std::string_view s) {
  std::size_t i = 0, n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

StoreErrc classifySqlState(const char* state) {
  if (!state || std::strlen(state) != 5) return StoreErrc::Internal;
  std::string_view s(state);
  std::string_view cls = s.substr(0, 2);
  if (cls == "08" || cls == "53" || cls == "57" || s == "40001" || s == "40P01" || s == "55P03")
    return StoreErrc::Unavailable;
  if (s == "23505" || s == "23503") return StoreErrc::Conflict;
  if (cls == "23" || cls == "22") return StoreErrc::InvalidData;
  return StoreErrc::Internal;
}

// libpq messages span lines ("...failed: Connection refused\n\tIs the server running..."): one line.
std::string trimmed(const char* msg) {
  std::string s;
  for (const char* p = msg ? msg : ""; *p; ++p) {
    if (*p == '\n' || *p == '\t') {
      if (!s.empty() && s.back() != ' ') s += ' ';
    } else {
      s += *p;
    }
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { libpq().PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

class PostgresRows final : public SqlRows {
 public:
  explicit PostgresRows(Result r) : r_(std::move(r)), rows_(r_ ? libpq().PQntuples(r_.get()) : 0) {}
  bool next() override { return ++row_ < rows_; }
  bool isNull(int c) override { return libpq().PQgetisnull(r_.get(), row_, c) != 0; }
  std::int64_t getInt(int c) override {
    const char* v = libpq().PQgetvalue(r_.get(), row_, c);
    std::int64_t out = 0;
    std::from_chars(v, v + std::strlen(v), out);  // SUM() of bigint comes back as numeric: digits only
    return out;
  }
  double getReal(int c) override { return std::strtod(libpq().PQgetvalue(r_.get(), row_, c), nullptr); }
  std::string getText(int c) override {
    return std::string(libpq().PQgetvalue(r_.get(), row_, c),
                       static_cast<std::size_t>(libpq().PQgetlength(r_.get(), row_, c)));
  }
  std::string getBlob(int c) override {
    std::size_t len = 0;
    unsigned char* raw =
        libpq().PQunescapeBytea(reinterpret_cast<const unsigned char*>(libpq().PQgetvalue(r_.get(), row_, c)), &len);
    if (!raw) throw StoreError(StoreErrc::Internal, "postgres: cannot decode bytea value");
    std::string out(reinterpret_cast<const char*>(raw), len);
    libpq().PQfreemem(raw);
    return out;
  }
  bool getBool(int c) override {
    const char* v = libpq().PQgetvalue(r_.get(), row_, c);
    return v[0] == 't' || v[0] == '1';
  }

 private:
  Result r_;
  int rows_;
  int row_ = -1;
};

void ignoreNotice(void*, const char*) {}

class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(const std::string& url) : redacted_(redactUrlPassword(url)) {
    // Defaults first: values in the URL override them (libpq applies later settings last).
    const char* keys[] = {"connect_timeout",  "keepalives",
                          "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout",
                          "application_name", "client_encoding",
                          "dbname",           nullptr};
    const char* vals[] = {"5", "1", "10", "5", "3", "30000", "sluice", "UTF8", url.c_str(), nullptr};
    conn_ = libpq().PQconnectdbParams(keys, vals, 1);
    if (!conn_) throw StoreError(StoreErrc::Unavailable, "postgres: out of memory connecting to " + redacted_);
    if (libpq().PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = "postgres: cannot connect to " + redacted_ + ": " + trimmed(libpq().PQerrorMessage(conn_));
      libpq().PQfinish(conn_);
      conn_ = nullptr;
      throw StoreError(StoreErrc::Unavailable, msg);
    }
    libpq().PQsetNoticeProcessor(conn_, ignoreNotice, nullptr);
    cancel_->renew(conn_);
  }
  ~PostgresConnection() override {
    cancel_->renew(nullptr);
    libpq().PQfinish(conn_);
  }

  Dialect dialect() const override { return Dialect::Postgres; }

  void execScript(const std::string& sql) override {
    // A lost session took its transaction with it; reconnecting just to roll back would only
    // stall the error path for up to connect_timeout.
    if (sql == "ROLLBACK" && libpq().PQstatus(conn_) != CONNECTION_OK) return;
    ensureConnected();
    check(Result(libpq().PQexec(conn_, sql.c_str())), "exec");
  }

  std::unique_ptr<SqlRows> query(const std::string& sql, std::span<const SqlParam> params) override {
    return std::make_unique<PostgresRows>(run(sql, params));
  }

  std::int64_t execute(const std::string& sql, std::span<const SqlParam> params) override {
    Result r = run(sql, params);
    const char* n = libpq().PQcmdTuples(r.get());
    std::int64_t out = 0;
    std::from_chars(n, n + std::strlen(n), out);
    return out;
  }

  void beginWrite() override { execScript("BEGIN"); }

  std::function<void()> canceller() override {
    return [c = cancel_] { c->cancel(); };
  }

 private:
  // The cancel request's target: the session's backend, renewed when the session is (under
  // the lock, on the connection's thread), cleared when the connection closes. PQcancel is
  // thread-safe; the lock keeps the PGcancel alive while another thread uses it.
  struct Cancel {
    std::mutex mu;
    PGcancel* handle = nullptr;
    void renew(PGconn* conn) {
      std::lock_guard lk(mu);
      if (handle) libpq().PQfreeCancel(handle);
      handle = conn ? libpq().PQgetCancel(conn) : nullptr;
    }
    void cancel() {
      std::lock_guard lk(mu);
      char err[256];
      if (handle) libpq().PQcancel(handle, err, sizeof err);
    }
    ~Cancel() {
      if (handle) libpq().PQfreeCancel(handle);
    }
  };

  void ensureConnected() {
    if (libpq().PQstatus(conn_) == CONNECTION_OK) return;
    prepared_.clear();
    libpq().PQreset(conn_);
    if (libpq().PQstatus(conn_) != CONNECTION_OK)
      throw StoreError(StoreErrc::Unavailable,
                       "postgres: cannot reconnect to " + redacted_ + ": " + trimmed(libpq().PQerrorMessage(conn_)));
    libpq().PQsetNoticeProcessor(conn_, ignoreNotice, nullptr);
    cancel_->renew(conn_);
  }

  Result check(Result r, std::string_view what) {
    ExecStatusType st = r ? libpq().PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    StoreErrc code = StoreErrc::Internal;
    std::string msg;
    if (r) {
      code = classifySqlState(libpq().PQresultErrorField(r.get(), PG_DIAG_SQLSTATE));
      msg = trimmed(libpq().PQresultErrorMessage(r.get()));
    }
    if (msg.empty()) msg = trimmed(libpq().PQerrorMessage(conn_));
    if (libpq().PQstatus(conn_) != CONNECTION_OK) {
      code = StoreErrc::Unavailable;
      prepared_.clear();
    }
    throw StoreError(code, "postgres: " + std::string(what) + ": " + msg);
  }

  // "? ... ?" -> "$1 ... $2". Our SQL has no '?' inside literals.
  static std::string numberPlaceholders(const std::string& sql) {
    std::string out;
    out.reserve(sql.size() + 16);
    int n = 0;
    for (char c : sql) {
      if (c == '?') {
        out += '$';
        out += std::to_string(++n);
      } else {
        out += c;
      }
    }
    return out;
  }

  Result run(const std::string& sql, std::span<const SqlParam> params) {
    ensureConnected();
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      std::string name = "s" + std::to_string(++statement_seq_);
      check(Result(libpq().PQprepare(conn_, name.c_str(), numberPlaceholders(sql).c_str(), 0, nullptr)), "prepare");
      it = prepared_.emplace(sql, std::move(name)).first;
    }
    // Text-format values, NUL-terminated, packed into one buffer (a log batch has thousands of
    // parameters: one allocation, not one each). Offsets first, pointers once it stops growing.
    constexpr std::size_t kNull = static_cast<std::size_t>(-1);
    std::string& buf = param_buf_;
    buf.clear();
    offsets_.assign(params.size(), kNull);
    lengths_.assign(params.size(), 0);
    formats_.assign(params.size(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const SqlParam& p = params[i];
      std::size_t at = buf.size();
      switch (p.kind) {
        case SqlParam::Kind::Null:
          continue;
        case SqlParam::Kind::Int: {
          char num[24];
          buf.append(num, std::to_chars(num, num + sizeof num, p.i).ptr);
          break;
        }
        case SqlParam::Kind::Bool:
          buf += p.i ? "true" : "false";
          break;
        case SqlParam::Kind::Real: {
          char num[64];
          buf.append(num, std::to_chars(num, num + sizeof num, p.d).ptr);
          break;
        }
        case SqlParam::Kind::Text:
          if (validUtf8AndNoNul(p.s))
            buf += p.s;
          else
            buf += sanitizeUtf8(p.s);
          break;
        case SqlParam::Kind::Blob:
          buf += p.s;
          lengths_[i] = static_cast<int>(p.s.size());
          formats_[i] = 1;  // binary: bytes pass untouched
          break;
      }
      buf += '\0';
      offsets_[i] = at;
    }
    values_.assign(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (offsets_[i] != kNull) values_[i] = buf.data() + offsets_[i];
    return check(Result(libpq().PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                                               values_.data(), lengths_.data(), formats_.data(), 0)),
                 "query");
  }

  PGconn* conn_ = nullptr;
  std::shared_ptr<Cancel> cancel_ = std::make_shared<Cancel>();
  std::string redacted_;
  std::unordered_map<std::string, std::string> prepared_;  // SQL -> statement name
  std::uint64_t statement_seq_ = 0;
  // run()'s parameter arrays, kept to reuse their memory across statements.
  std::string param_buf_;
  std::vector<std::size_t> offsets_;
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

}  // namespace

std::string redactUrlPassword(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto auth_begin = scheme + 3;
  auto auth_end = url.find_first_of("/?#", auth_begin);
  if (auth_end == std::string::npos) auth_end = url.size();
  auto at = url.rfind('@', auth_end);
  if (at == std::string::npos || at < auth_begin) return url;
  auto colon = url.find(':', auth_begin);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

std::string sanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    // Find the longest valid prefix of the sequence at i (1..4 bytes).
    std::size_t len = 0;
    auto c = static_cast<unsigned char>(s[i]);
    if (c != 0 && c < 0x80) {
      len = 1;
    } else if (c >= 0xc0) {
      std::size_t want = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
      if (want && i + want <= s.size() && validUtf8AndNoNul(s.substr(i, want))) len = want;
    }
    if (len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::unique_ptr<SqlConnection> openPostgresConnection(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = libpq().PQconninfoParse(url.c_str(), &err);
  if (!opts) {
    std::string msg = "store url '" + redactUrlPassword(url) + "' is not a valid PostgreSQL URI: " + trimmed(err);
    libpq().PQfreemem(err);
    throw StoreError(StoreErrc::BadUrl, msg);
  }
  // libpq only checks the port when connecting; a typo there is a configuration error, not an outage.
  std::string bad_port;
  for (auto* o = opts; o->keyword; ++o) {
    if (std::strcmp(o->keyword, "port") != 0 || !o->val) continue;
    std::string_view v(o->val);
    for (char c : v)
      if (!(c >= '0' && c <= '9') && c != ',') bad_port = v;
  }
  libpq().PQconninfoFree(opts);
  if (!bad_port.empty())
    throw StoreError(StoreErrc::BadUrl,
                     "store url '" + redactUrlPassword(url) + "' has an invalid port '" + bad_port + "'");
  return std::make_unique<PostgresConnection>(url);
}

}  // namespace sluice::store
