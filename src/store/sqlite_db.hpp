// A small RAII layer over SQLite's C API: a connection, a prepared statement
// with bind/column helpers, and a transaction guard that rolls back unless it
// was committed. Failures are values carrying SQLite's own code and message;
// the store adds the file, the session and the seq they concern.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cairn::sqlite {

struct DbError {
  int code = SQLITE_ERROR;  // the extended result code
  std::string message;      // "database is locked (code 5)"
};

template <class T>
using DbResult = std::expected<T, DbError>;
using DbStatus = std::expected<void, DbError>;

class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(Statement&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Ready for the next execution: the cursor rewound and every parameter NULL.
  Statement& reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return *this;
  }

  // Parameters are 1-based. Text is bound without a copy (SQLITE_STATIC): it
  // must stay alive until the statement is stepped to completion or reset. The
  // deleted overload keeps a temporary std::string from binding and dangling.
  Statement& bind(int index, std::string_view text) {
    // SQLite binds a null pointer as NULL; an empty view may have one.
    sqlite3_bind_text64(stmt_, index, text.data() ? text.data() : "", text.size(), SQLITE_STATIC, SQLITE_UTF8);
    return *this;
  }
  Statement& bind(int index, std::string&& text) = delete;
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, std::int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  Statement& bind(int index, const std::optional<std::string>& text) {
    return text ? bind(index, std::string_view(*text)) : bind_null(index);
  }
  Statement& bind(int index, std::optional<std::string_view> text) {
    return text ? bind(index, *text) : bind_null(index);
  }
  Statement& bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
  }

  // One step: true while a row is available, false once done.
  DbResult<bool> step();
  // Steps a statement that returns no rows to completion and resets it.
  DbStatus run();

  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  // The column's text, valid until the next step or reset. Text is fetched
  // before its length, as SQLite requires for the length to be right.
  std::string_view text(int column) const {
    const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (data == nullptr) return {};
    return {data, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
  }
  std::optional<std::string> optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return std::string(text(column));
  }

  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class Database {
 public:
  Database() = default;
  ~Database() { sqlite3_close_v2(db_); }
  Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Database& operator=(Database&& other) noexcept {
    if (this != &other) {
      sqlite3_close_v2(db_);
      db_ = std::exchange(other.db_, nullptr);
    }
    return *this;
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  enum class Missing { create, fail };
  // Opens a database file for reading and writing, creating it if it is
  // missing and `missing` says so. The caller serialises use of the
  // connection (SQLITE_OPEN_NOMUTEX).
  static DbResult<Database> open(const std::string& file, Missing missing = Missing::create);

  // Runs one or more statements that return nothing of interest.
  DbStatus exec(const char* sql);
  DbResult<Statement> prepare(std::string_view sql);
  // A single-value query, e.g. "PRAGMA journal_mode=WAL".
  DbResult<std::string> query_text(const char* sql);

  void set_busy_timeout(int milliseconds) { sqlite3_busy_timeout(db_, milliseconds); }
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // The last failure on this connection, as a DbError.
  DbError error() const;
  sqlite3* get() const { return db_; }

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

// A transaction that rolls back when it goes out of scope uncommitted.
class Transaction {
 public:
  enum class Mode { deferred, immediate };
  static DbResult<Transaction> begin(Database& db, Mode mode);
  ~Transaction() { rollback(); }
  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  DbStatus commit();
  void rollback();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed or rolled back
};

}  // namespace cairn::sqlite
