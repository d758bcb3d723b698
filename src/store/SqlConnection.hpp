// SqlConnection: the little a Store needs from a database driver — parameterized statements
// (prepared once per connection and cached), typed result rows, transactions. SqlStore writes
// its queries once against this; sqlite/ and postgres/ implement it. SQL text uses `?`
// placeholders; the PostgreSQL side numbers them. Values only ever travel as parameters.
// Thread-safety: one thread at a time, like the Store that owns it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "store/Store.hpp"

namespace sluice::store {

enum class Dialect { Sqlite, Postgres };

// A statement parameter. Text and blob views must outlive the call they are passed to.
struct SqlParam {
  enum class Kind { Null, Int, Real, Text, Blob, Bool };
  Kind kind = Kind::Null;
  std::int64_t i = 0;
  double d = 0;
  std::string_view s;

  static SqlParam null() { return {}; }
  static SqlParam integer(std::int64_t v) { return {Kind::Int, v, 0, {}}; }
  static SqlParam real(double v) { return {Kind::Real, 0, v, {}}; }
  static SqlParam text(std::string_view v) { return {Kind::Text, 0, 0, v}; }
  static SqlParam blob(std::string_view v) { return {Kind::Blob, 0, 0, v}; }
  static SqlParam boolean(bool v) { return {Kind::Bool, v ? 1 : 0, 0, {}}; }
  static SqlParam optInt(const std::optional<std::int64_t>& v) { return v ? integer(*v) : null(); }
  static SqlParam optReal(const std::optional<double>& v) { return v ? real(*v) : null(); }
  static SqlParam optText(const std::optional<std::string>& v) { return v ? text(*v) : null(); }
};

// Rows of one statement; valid until the next call on the connection.
class SqlRows {
 public:
  virtual ~SqlRows() = default;
  virtual bool next() = 0;  // advances to the next row; false at the end
  virtual bool isNull(int col) = 0;
  virtual std::int64_t getInt(int col) = 0;
  virtual double getReal(int col) = 0;
  virtual std::string getText(int col) = 0;
  virtual std::string getBlob(int col) = 0;
  virtual bool getBool(int col) = 0;

  std::optional<std::int64_t> optInt(int col) { return isNull(col) ? std::nullopt : std::optional(getInt(col)); }
  std::optional<double> optReal(int col) { return isNull(col) ? std::nullopt : std::optional(getReal(col)); }
  std::optional<std::string> optText(int col) { return isNull(col) ? std::nullopt : std::optional(getText(col)); }
};

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  virtual Dialect dialect() const = 0;
  // Runs one or more statements without parameters (DDL, BEGIN/COMMIT).
  virtual void execScript(const std::string& sql) = 0;
  // Runs a statement; returns the rows it produced (possibly none).
  virtual std::unique_ptr<SqlRows> query(const std::string& sql, std::span<const SqlParam> params) = 0;
  // Runs a statement; returns how many rows it changed.
  virtual std::int64_t execute(const std::string& sql, std::span<const SqlParam> params) = 0;
  // Opens a write transaction that serializes with other writers' (SQLite: BEGIN IMMEDIATE).
  virtual void beginWrite() = 0;
  // A function that makes the statement under way on this connection fail soon (SQLite:
  // sqlite3_interrupt; PostgreSQL: a cancel request). Callable from any thread, any number of
  // times, while the connection lives; does nothing when no statement runs.
  virtual std::function<void()> canceller() = 0;
};

// Opens a connection for a store URL (see Store::open). Throws StoreError.
std::unique_ptr<SqlConnection> openSqlConnection(const std::string& url);

// Commits on commit(); rolls back when destroyed otherwise (errors while rolling back are
// swallowed: the connection may be the thing that failed).
class SqlTransaction {
 public:
  explicit SqlTransaction(SqlConnection& c) : c_(c) { c_.beginWrite(); }
  ~SqlTransaction() {
    if (!done_) {
      try {
        c_.execScript("ROLLBACK");
      } catch (...) {
      }
    }
  }
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;
  void commit() {
    c_.execScript("COMMIT");
    done_ = true;
  }

 private:
  SqlConnection& c_;
  bool done_ = false;
};

}  // namespace sluice::store
