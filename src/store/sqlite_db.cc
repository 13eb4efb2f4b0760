#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <utility>

namespace kforge {

Status SqliteStatus(int code, const std::string& message) {
  switch (code & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
      return Status::InvalidArgument(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(message);
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_INTERNAL:
      return Status::Internal(message);
    default:
      return Status::IoError(message);
  }
}

namespace {

// The statement's text on one line, shortened, to say where an error came from.
std::string BriefSql(std::string_view sql) {
  constexpr size_t kMaxLength = 60;
  std::string brief;
  for (char c : sql) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && (brief.empty() || brief.back() == ' ')) continue;
    brief += space ? ' ' : c;
  }
  while (!brief.empty() && brief.back() == ' ') brief.pop_back();
  if (brief.size() > kMaxLength) brief = brief.substr(0, kMaxLength) + "...";
  return brief;
}

// "<prefix><SQLite's message> (in <statement>)"
Status ConnectionStatus(sqlite3* db, int code, const std::string& prefix, std::string_view sql) {
  return SqliteStatus(code, prefix + sqlite3_errmsg(db) + " (in " + BriefSql(sql) + ")");
}

}  // namespace

// ---- SqliteStatement ----

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_), statement_(std::exchange(other.statement_, nullptr)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(statement_);
    db_ = other.db_;
    statement_ = std::exchange(other.statement_, nullptr);
  }
  return *this;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(statement_); }

Status SqliteStatement::BindResult(int code, int index) {
  if (code == SQLITE_OK) return Status::Ok();
  return ConnectionStatus(db_, code, "binding parameter " + std::to_string(index) + ": ", sqlite3_sql(statement_));
}

Status SqliteStatement::Bind(int index, int64_t value) {
  return BindResult(sqlite3_bind_int64(statement_, index, value), index);
}

Status SqliteStatement::Bind(int index, double value) {
  if (std::isnan(value)) return Bind(index, std::nullopt);
  return BindResult(sqlite3_bind_double(statement_, index, value), index);
}

Status SqliteStatement::Bind(int index, std::string_view value) {
  // A non-null pointer even for an empty view, so that "" is stored as '' and not as NULL.
  const char* data = value.empty() ? "" : value.data();
  return BindResult(sqlite3_bind_text64(statement_, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
                    index);
}

Status SqliteStatement::Bind(int index, std::nullopt_t) {
  return BindResult(sqlite3_bind_null(statement_, index), index);
}

Result<bool> SqliteStatement::Step() {
  int code = sqlite3_step(statement_);
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  Status status = ConnectionStatus(db_, code, "", sqlite3_sql(statement_));
  sqlite3_reset(statement_);
  return status;
}

Status SqliteStatement::Run() {
  ASSIGN_OR_RETURN(bool has_row, Step());
  (void)has_row;  // a RETURNING-less write yields no row; a stray one is harmless
  return Status::Ok();
}

bool SqliteStatement::IsNull(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

int64_t SqliteStatement::ColumnInt64(int column) const { return sqlite3_column_int64(statement_, column); }

double SqliteStatement::ColumnDouble(int column) const {
  if (IsNull(column)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(statement_, column);
}

std::string SqliteStatement::ColumnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
  if (text == nullptr) return std::string();
  return std::string(text, static_cast<size_t>(sqlite3_column_bytes(statement_, column)));
}

std::optional<std::string> SqliteStatement::ColumnOptionalText(int column) const {
  if (IsNull(column)) return std::nullopt;
  return ColumnText(column);
}

std::optional<double> SqliteStatement::ColumnOptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return sqlite3_column_double(statement_, column);
}

// ---- SqliteDb ----

Result<SqliteDb> SqliteDb::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  int code = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (code != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
    sqlite3_close_v2(db);
    return SqliteStatus(code, "cannot open database " + path + ": " + message);
  }
  return SqliteDb(db, path);
}

SqliteDb::SqliteDb(SqliteDb&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::Execute(const std::string& sql) {
  char* error = nullptr;
  int code = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (code == SQLITE_OK) return Status::Ok();
  std::string message = error != nullptr ? error : sqlite3_errstr(code);
  sqlite3_free(error);
  return SqliteStatus(code, path_ + ": " + message + " (in " + BriefSql(sql) + ")");
}

Result<SqliteStatement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  int code = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &statement, nullptr);
  if (code != SQLITE_OK) {
    return ConnectionStatus(db_, code, path_ + ": ", sql);
  }
  return SqliteStatement(db_, statement);
}

Result<int64_t> SqliteDb::QueryInt64(std::string_view sql) {
  ASSIGN_OR_RETURN(SqliteStatement statement, Prepare(sql));
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return Status::Internal("no row from " + std::string(sql));
  return statement.ColumnInt64(0);
}

int64_t SqliteDb::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

int64_t SqliteDb::Changes() const { return sqlite3_changes64(db_); }

// ---- SqliteTransaction ----

Result<SqliteTransaction> SqliteTransaction::Begin(SqliteDb& db) {
  RETURN_IF_ERROR(db.Execute("BEGIN IMMEDIATE"));
  return SqliteTransaction(&db);
}

Result<SqliteTransaction> SqliteTransaction::BeginRead(SqliteDb& db) {
  RETURN_IF_ERROR(db.Execute("BEGIN DEFERRED"));
  return SqliteTransaction(&db);
}

SqliteTransaction::SqliteTransaction(SqliteTransaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

SqliteTransaction::~SqliteTransaction() {
  // Nothing useful can be done if the rollback itself fails; SQLite then rolls back on close.
  if (db_ != nullptr) (void)db_->Execute("ROLLBACK");
}

Status SqliteTransaction::Commit() {
  if (db_ == nullptr) return Status::Internal("commit of a finished transaction");
  Status status = db_->Execute("COMMIT");
  if (status.ok()) db_ = nullptr;
  return status;
}

}  // namespace kforge
