#include "sqlite_db.hpp"

#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace cairn::sqlite {

namespace {

// SQLite's words for a failure, and what a person needs beside them: which
// file is damaged and how to get its records back, or why the operating
// system refused to open it.
DbError error_of(sqlite3* db, int code) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  std::string text = fmt::format("{} (sqlite code {})", message, code);
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  switch (code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      if (file != nullptr && *file != '\0') {
        text += fmt::format(
            ": {0} is damaged (or is not an SQLite database); recover what it still holds into a new file with "
            "`sqlite3 {0} .recover | sqlite3 NEW.db` (the sqlite3 command) and use that file instead",
            file);
      }
      break;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
      if (const int os = db != nullptr ? sqlite3_system_errno(db) : 0; os != 0) {
        text += fmt::format(": {}", std::strerror(os));
      }
      break;
    default:
      break;
  }
  return DbError{code, std::move(text)};
}

// A file: URI for `file` with `parameter`. Only '%', '?' and '#' mean
// something in a URI's path, so only they are escaped.
std::string file_uri(const std::string& file, std::string_view parameter) {
  std::string uri = "file:";
  for (const char c : file) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02x}", static_cast<unsigned char>(c));
    } else {
      uri.push_back(c);
    }
  }
  return fmt::format("{}?{}", uri, parameter);
}

}  // namespace

Errc error_code(const DbError& error) {
  switch (error.code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Errc::corrupt_log;
    case SQLITE_READONLY:
      return Errc::read_only;
    default:
      return Errc::io_error;
  }
}

DbResult<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  DbError error = error_of(sqlite3_db_handle(stmt_), sqlite3_extended_errcode(sqlite3_db_handle(stmt_)));
  sqlite3_reset(stmt_);
  return std::unexpected(std::move(error));
}

DbStatus Statement::run() {
  auto stepped = step();
  sqlite3_reset(stmt_);
  if (!stepped) return std::unexpected(std::move(stepped.error()));
  return {};
}

DbResult<Database> Database::open_with(const std::string& name, int flags, Access access) {
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  Database db(handle, access);  // closes the handle on every path, even a failed open
  if (rc != SQLITE_OK) return std::unexpected(error_of(handle, rc));
  sqlite3_extended_result_codes(handle, 1);
  return db;
}

DbResult<Database> Database::open(const std::string& file, Missing missing) {
  return open_with(file, SQLITE_OPEN_READWRITE | (missing == Missing::create ? SQLITE_OPEN_CREATE : 0),
                   Access::read_write);
}

DbResult<Database> Database::open_as(const std::string& file, Access access) {
  switch (access) {
    case Access::read_write:
      return open(file, Missing::fail);
    case Access::read_only:
      return open_with(file_uri(file, "mode=ro"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, access);
    case Access::immutable:
      return open_with(file_uri(file, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, access);
  }
  return std::unexpected(DbError{SQLITE_MISUSE, "unknown access"});
}

DbResult<Database> Database::open_read_only(const std::string& file) {
  // SQLite opens lazily: a first read shows whether FILE-shm could be had.
  const auto readable = [](DbResult<Database> db) -> DbResult<Database> {
    if (!db) return db;
    if (auto read = db->exec("SELECT count(*) FROM sqlite_schema"); !read) return std::unexpected(std::move(read.error()));
    return db;
  };
  auto db = readable(open_as(file, Access::read_only));
  if (db) return db;
  const int primary = db.error().code & 0xff;
  if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN) return db;
  // FILE-shm cannot be made here. Reading the file as immutable ignores a
  // write-ahead log, so it is right only when there is none: a writer that
  // is running, or one that died, leaves FILE-wal behind.
  std::error_code ec;
  const std::string wal = file + "-wal";
  if (std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0) {
    return std::unexpected(DbError{
        db.error().code,
        fmt::format("{}; {} holds commits not yet in {}, and reading them needs {}-shm, which this user cannot "
                    "create: let a user who may write its directory open the store once, or copy the files where "
                    "you may write",
                    db.error().message, wal, file, file)});
  }
  return readable(open_as(file, Access::immutable));
}

DbStatus Database::exec(const char* sql) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error());
  return {};
}

DbResult<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &stmt, nullptr);
  Statement statement(stmt);
  if (rc != SQLITE_OK) return std::unexpected(error());
  return statement;
}

DbResult<std::string> Database::query_text(const char* sql) {
  auto statement = prepare(sql);
  if (!statement) return std::unexpected(std::move(statement.error()));
  auto row = statement->step();
  if (!row) return std::unexpected(std::move(row.error()));
  if (!*row) return std::string();
  return std::string(statement->text(0));
}

DbError Database::error() const { return error_of(db_, sqlite3_extended_errcode(db_)); }

DbResult<Transaction> Transaction::begin(Database& db, Mode mode) {
  auto begun = db.exec(mode == Mode::immediate ? "BEGIN IMMEDIATE" : "BEGIN");
  if (!begun) return std::unexpected(std::move(begun.error()));
  return Transaction(&db);
}

DbStatus Transaction::commit() {
  if (db_ == nullptr) return std::unexpected(DbError{SQLITE_MISUSE, "commit without a transaction"});
  auto committed = db_->exec("COMMIT");
  if (!committed) {
    rollback();
    return committed;
  }
  db_ = nullptr;
  return {};
}

void Transaction::rollback() {
  if (db_ == nullptr) return;
  // A failed COMMIT may already have rolled back (e.g. after an I/O error);
  // ROLLBACK then has nothing to do.
  if (db_->in_transaction()) (void)db_->exec("ROLLBACK");
  db_ = nullptr;
}

}  // namespace cairn::sqlite
