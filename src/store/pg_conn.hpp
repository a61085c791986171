// A small RAII layer over libpq: a connection, a query's result, and the
// failures as values. It knows nothing of sessions; the PostgreSQL store adds
// which session and seq a failure concerns.
//
// Secrets: a connection is described by its redacted URI (no password); libpq's
// own messages never carry the password either.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

struct pg_conn;
struct pg_result;

namespace cairn::pg {

struct PgError {
  std::string message;
  std::string sqlstate;  // empty when the server sent none (a lost connection)
  // The connection is gone (or the server is shutting down or restarting):
  // the statement's outcome is unknown, and reconnecting may help.
  bool connection_lost = false;
};

template <class T>
using PgResult = std::expected<T, PgError>;
using PgStatus = std::expected<void, PgError>;

// A statement parameter: text, or SQL NULL.
using Param = std::optional<std::string>;

class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* result);
  int size() const;
  bool is_null(int row, int column) const;
  std::string_view text(int row, int column) const;
  std::optional<std::string> optional_text(int row, int column) const;
  std::int64_t int64(int row, int column) const;  // 0 for NULL or a non-number
  // Rows an INSERT, UPDATE or DELETE touched.
  std::int64_t affected() const;

 private:
  struct Free {
    void operator()(pg_result* result) const;
  };
  std::unique_ptr<pg_result, Free> result_;
};

class Connection {
 public:
  // `conninfo` is a libpq connection string or postgres:// URI.
  static PgResult<Connection> connect(const std::string& conninfo);
  Connection() = default;
  bool connected() const;

  // One statement with parameters, its own transaction unless one is open.
  PgResult<Rows> exec(std::string_view sql, std::span<const Param> params = {});
  // Prepares `sql` under `name` on this connection (gone when it reconnects),
  // and runs such a statement.
  PgStatus prepare(const std::string& name, std::string_view sql);
  PgResult<Rows> exec_prepared(const std::string& name, std::span<const Param> params);
  // exec() for statements without results; `sql` may hold several.
  PgStatus run(std::string_view sql);
  // Reconnects with the same settings.
  PgStatus reconnect();

  // For a LISTENing connection: its socket, to wait on; reading what arrived
  // on it (false: the connection is lost); and the payload of each
  // notification received, oldest first.
  int socket() const;
  bool consume_input();
  std::optional<std::string> next_notification();

 private:
  struct Close {
    void operator()(pg_conn* conn) const;
  };
  explicit Connection(pg_conn* conn) : conn_(conn) {}
  PgError error_of(pg_result* result) const;
  PgResult<Rows> result_of(pg_result* result) const;
  std::unique_ptr<pg_conn, Close> conn_;
};

// A transaction on a connection, rolled back unless committed.
class Transaction {
 public:
  static PgResult<Transaction> begin(Connection& connection);
  Transaction(Transaction&& other) noexcept : connection_(std::exchange(other.connection_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  PgStatus commit();

 private:
  explicit Transaction(Connection* connection) : connection_(connection) {}
  Connection* connection_;
};

// `uri` without its password (user:secret@host -> user@host, password=...
// dropped): what messages and uri() show.
std::string redact(std::string_view uri);

}  // namespace cairn::pg
