// PostgresConnection: SqlConnection over libpq. Statements are prepared once per session and
// cached; a broken session is re-established (PQreset) on the next call, and the call fails
// with StoreErrc::Unavailable while the server stays unreachable. Text parameters are sent
// as valid UTF-8 without NUL bytes (bad sequences become U+FFFD) so a truncated body cannot
// make a log row fail. Thread-safety: one thread at a time.
#pragma once
#include <memory>
#include <string>

#include "store/SqlConnection.hpp"

namespace sluice::store {

// `url` is a libpq URI, "postgres://user:pass@host:5432/db?param=value". Unless the URL says
// otherwise, connect_timeout is 5 s and TCP keepalives / tcp_user_timeout detect a dead peer
// within about 30 s. Throws StoreError (BadUrl or Unavailable); messages never hold the password.
std::unique_ptr<SqlConnection> openPostgresConnection(const std::string& url);

// "postgres://user:secret@host/db" -> "postgres://user:***@host/db" (for messages).
std::string redactUrlPassword(const std::string& url);

// Replaces invalid UTF-8 sequences and NUL bytes by U+FFFD.
std::string sanitizeUtf8(std::string_view s);

}  // namespace sluice::store
