#include "sqlite_db.hpp"

#include <fmt/format.h>

namespace cairn::sqlite {

namespace {

DbError error_of(sqlite3* db, int code) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return DbError{code, fmt::format("{} (sqlite code {})", message, code)};
}

}  // namespace

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

DbResult<Database> Database::open(const std::string& file, Missing missing) {
  sqlite3* handle = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (missing == Missing::create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(file.c_str(), &handle, flags, nullptr);
  Database db(handle);  // closes the handle on every path, even a failed open
  if (rc != SQLITE_OK) return std::unexpected(error_of(handle, rc));
  sqlite3_extended_result_codes(handle, 1);
  return db;
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
