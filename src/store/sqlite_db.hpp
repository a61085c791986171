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

#include "cairn/error.hpp"

namespace cairn::sqlite {

struct DbError {
  int code = SQLITE_ERROR;  // the extended result code
  // "database is locked (sqlite code 5)". A damaged file's message names the
  // file and how to recover what it holds; a file that cannot be opened, the
  // operating system's reason.
  std::string message;
};

// The store's error code for a failure: corrupt_log for a damaged file
// (SQLITE_CORRUPT, SQLITE_NOTADB), read_only for a write SQLite refused,
// io_error for the rest.
Errc error_code(const DbError& error);

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
  Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)), access_(other.access_) {}
  Database& operator=(Database&& other) noexcept {
    if (this != &other) {
      sqlite3_close_v2(db_);
      db_ = std::exchange(other.db_, nullptr);
      access_ = other.access_;
    }
    return *this;
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  enum class Missing { create, fail };
  // How a connection reads the file.
  enum class Access {
    read_write,
    // Reads only, and sees what writers commit (through FILE-shm, which it
    // creates when it is missing).
    read_only,
    // Reads a file nobody writes, without locks or FILE-shm: for a file this
    // user may only read in a directory it may not write, which has no
    // write-ahead log holding commits the file does not.
    immutable,
  };
  // Opens a database file for reading and writing, creating it if it is
  // missing and `missing` says so. The caller serialises use of the
  // connection (SQLITE_OPEN_NOMUTEX).
  static DbResult<Database> open(const std::string& file, Missing missing = Missing::create);
  // Opens an existing file for reading only: read_only where SQLite can, else
  // immutable when that misses nothing (see Access).
  static DbResult<Database> open_read_only(const std::string& file);
  // Opens an existing file the way another connection to it was opened.
  static DbResult<Database> open_as(const std::string& file, Access access);

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
  Access access() const { return access_; }

 private:
  Database(sqlite3* db, Access access) : db_(db), access_(access) {}
  static DbResult<Database> open_with(const std::string& name, int flags, Access access);
  sqlite3* db_ = nullptr;
  Access access_ = Access::read_write;
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
