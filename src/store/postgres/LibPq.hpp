// libpq, opened when the first PostgreSQL store is: a gateway on SQLite (the default) never maps
// it, nor what it pulls in (GnuTLS, Kerberos, LDAP, SASL: about 3 MB of resident pages).
#pragma once
#include <libpq-fe.h>

namespace sluice::store {

// Every libpq function Sluice calls.
// clang-format off
#define SLUICE_LIBPQ_FUNCTIONS(X) \
  X(PQcancel) \
  X(PQclear) \
  X(PQcmdTuples) \
  X(PQconnectdbParams) \
  X(PQconninfoFree) \
  X(PQconninfoParse) \
  X(PQerrorMessage) \
  X(PQexec) \
  X(PQexecPrepared) \
  X(PQfinish) \
  X(PQfreeCancel) \
  X(PQfreemem) \
  X(PQgetCancel) \
  X(PQgetisnull) \
  X(PQgetlength) \
  X(PQgetvalue) \
  X(PQntuples) \
  X(PQprepare) \
  X(PQreset) \
  X(PQresultErrorField) \
  X(PQresultErrorMessage) \
  X(PQresultStatus) \
  X(PQsetNoticeProcessor) \
  X(PQstatus) \
  X(PQunescapeBytea)
// clang-format on

struct LibPq {
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is declared, not an expression
#define SLUICE_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
  SLUICE_LIBPQ_FUNCTIONS(SLUICE_LIBPQ_MEMBER)
#undef SLUICE_LIBPQ_MEMBER
};

// The library, loaded on the first call (thread-safe). Throws StoreError (Unavailable) saying
// what is missing when libpq.so.5 cannot be opened or lacks a function.
const LibPq& libpq();

}  // namespace sluice::store
