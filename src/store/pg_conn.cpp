#include "pg_conn.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

namespace cairn::pg {

namespace {

// libpq's messages end with a newline (sometimes several lines); ours don't.
std::string trimmed(const char* text) {
  std::string message = text ? text : "";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  for (char& c : message) {
    if (c == '\n') c = ' ';
  }
  return message.empty() ? std::string("unknown PostgreSQL failure") : message;
}

// SQLSTATE classes that mean the connection (or the server) went away: 08
// connection exception, 57P01-57P03 admin shutdown, crash shutdown, cannot
// connect now.
bool connection_state(std::string_view sqlstate) {
  return sqlstate.starts_with("08") || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03";
}

}  // namespace

// ---- rows ----------------------------------------------------------------------

Rows::Rows(pg_result* result) : result_(result) {}
void Rows::Free::operator()(pg_result* result) const { PQclear(result); }
int Rows::size() const { return result_ ? PQntuples(result_.get()) : 0; }
bool Rows::is_null(int row, int column) const { return PQgetisnull(result_.get(), row, column) != 0; }
std::string_view Rows::text(int row, int column) const {
  return {PQgetvalue(result_.get(), row, column), static_cast<std::size_t>(PQgetlength(result_.get(), row, column))};
}
std::optional<std::string> Rows::optional_text(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return std::string(text(row, column));
}
std::int64_t Rows::int64(int row, int column) const {
  if (is_null(row, column)) return 0;
  const std::string_view value = text(row, column);
  std::int64_t number = 0;
  std::from_chars(value.data(), value.data() + value.size(), number);
  return number;
}
std::int64_t Rows::affected() const {
  const char* count = result_ ? PQcmdTuples(result_.get()) : "";
  return count && *count ? std::strtoll(count, nullptr, 10) : 0;
}

// ---- connections -------------------------------------------------------------

void Connection::Close::operator()(pg_conn* conn) const { PQfinish(conn); }

PgResult<Connection> Connection::connect(const std::string& conninfo) {
  Connection connection(PQconnectdb(conninfo.c_str()));
  if (!connection.conn_) return std::unexpected(PgError{"out of memory", "", true});
  if (PQstatus(connection.conn_.get()) != CONNECTION_OK) {
    return std::unexpected(PgError{fmt::format("cannot connect: {}", trimmed(PQerrorMessage(connection.conn_.get()))), "", true});
  }
  // Notices (e.g. "relation already exists, skipping") are not for the user.
  PQsetNoticeProcessor(connection.conn_.get(), [](void*, const char*) {}, nullptr);
  return connection;
}

bool Connection::connected() const { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }

PgError Connection::error_of(pg_result* result) const {
  PgError error;
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  error.sqlstate = state ? state : "";
  const char* message = result ? PQresultErrorMessage(result) : nullptr;
  error.message = trimmed(message && *message ? message : PQerrorMessage(conn_.get()));
  error.connection_lost = PQstatus(conn_.get()) != CONNECTION_OK || connection_state(error.sqlstate);
  return error;
}

PgResult<Rows> Connection::exec(std::string_view sql, std::span<const Param> params) {
  if (!conn_) return std::unexpected(PgError{"not connected", "", true});
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& param : params) values.push_back(param ? param->c_str() : nullptr);
  const std::string text(sql);
  return result_of(PQexecParams(conn_.get(), text.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                nullptr, nullptr, 0));
}

PgResult<Rows> Connection::result_of(pg_result* result) const {
  const auto status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    PgError error = error_of(result);
    PQclear(result);
    return std::unexpected(std::move(error));
  }
  return Rows(result);
}

PgStatus Connection::prepare(const std::string& name, std::string_view sql) {
  if (!conn_) return std::unexpected(PgError{"not connected", "", true});
  const std::string text(sql);
  auto prepared = result_of(PQprepare(conn_.get(), name.c_str(), text.c_str(), 0, nullptr));
  if (!prepared) return std::unexpected(prepared.error());
  return {};
}

PgResult<Rows> Connection::exec_prepared(const std::string& name, std::span<const Param> params) {
  if (!conn_) return std::unexpected(PgError{"not connected", "", true});
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& param : params) values.push_back(param ? param->c_str() : nullptr);
  return result_of(PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(values.size()), values.data(), nullptr,
                                  nullptr, 0));
}

PgStatus Connection::run(std::string_view sql) {
  if (!conn_) return std::unexpected(PgError{"not connected", "", true});
  // PQexec, not PQexecParams: the simple protocol runs several statements.
  const std::string text(sql);
  pg_result* result = PQexec(conn_.get(), text.c_str());
  const auto status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    PgError error = error_of(result);
    PQclear(result);
    return std::unexpected(std::move(error));
  }
  PQclear(result);
  return {};
}

PgStatus Connection::reconnect() {
  if (!conn_) return std::unexpected(PgError{"not connected", "", true});
  PQreset(conn_.get());
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    return std::unexpected(PgError{fmt::format("cannot reconnect: {}", trimmed(PQerrorMessage(conn_.get()))), "", true});
  }
  return {};
}

int Connection::socket() const { return conn_ ? PQsocket(conn_.get()) : -1; }

bool Connection::consume_input() { return conn_ && PQconsumeInput(conn_.get()) == 1 && connected(); }

std::optional<std::string> Connection::next_notification() {
  if (!conn_) return std::nullopt;
  PGnotify* notify = PQnotifies(conn_.get());
  if (!notify) return std::nullopt;
  std::string payload = notify->extra ? notify->extra : "";
  PQfreemem(notify);
  return payload;
}

// ---- transactions --------------------------------------------------------------

PgResult<Transaction> Transaction::begin(Connection& connection) {
  if (auto begun = connection.run("BEGIN"); !begun) return std::unexpected(begun.error());
  return Transaction(&connection);
}

Transaction::~Transaction() {
  if (connection_ && connection_->connected()) (void)connection_->run("ROLLBACK");
}

PgStatus Transaction::commit() {
  Connection* connection = std::exchange(connection_, nullptr);
  return connection->run("COMMIT");
}

// ---- redaction -----------------------------------------------------------------

std::string redact(std::string_view uri) {
  std::string out(uri);
  // postgres://user:secret@host/db -> postgres://user@host/db
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto authority = scheme + 3;
    const auto end = out.find_first_of("/?", authority);
    const auto at = out.rfind('@', end == std::string::npos ? std::string::npos : end);
    if (at != std::string::npos && at >= authority) {
      const auto colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  // password=... as a query parameter or a conninfo keyword.
  for (std::size_t at = 0; (at = out.find("password=", at)) != std::string::npos;) {
    const bool starts = at == 0 || out[at - 1] == '?' || out[at - 1] == '&' || out[at - 1] == ' ';
    if (!starts) {
      at += 9;
      continue;
    }
    auto end = out.find_first_of("& ", at);
    if (end == std::string::npos) end = out.size();
    std::size_t from = at;
    if (from > 0 && (out[from - 1] == '&' || out[from - 1] == ' ')) --from;
    else if (end < out.size()) ++end;
    out.erase(from, end - from);
    at = from;
  }
  if (!out.empty() && (out.back() == '?' || out.back() == '&')) out.pop_back();
  return out;
}

}  // namespace cairn::pg
