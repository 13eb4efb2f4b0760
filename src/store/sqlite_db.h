// Small RAII wrappers over the SQLite C API: a connection, a prepared statement and a
// transaction. Every value reaches SQL through a bound parameter. Failures come back as Status
// with SQLite's message. None of these types is thread-safe; the Store serializes access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kforge {

// A prepared statement. Parameters are numbered from 1, columns from 0. A NaN double is bound
// as NULL (SQLite would do so anyway) and a NULL read as a double is NaN.
class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  Status Bind(int index, int64_t value);
  Status Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Status Bind(int index, double value);
  Status Bind(int index, std::string_view value);
  Status Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Status Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Status Bind(int index, std::nullopt_t);
  template <typename T>
  Status Bind(int index, const std::optional<T>& value) {
    return value.has_value() ? Bind(index, *value) : Bind(index, std::nullopt);
  }

  // Binds `values` to parameters 1..N in order.
  template <typename... Values>
  Status BindAll(const Values&... values) {
    int index = 0;
    Status status;
    ((status.ok() ? (void)(status = Bind(++index, values)) : (void)0), ...);
    return status;
  }

  // Advances to the next row: true when one is ready, false when the statement is done.
  Result<bool> Step();
  // Steps a statement that returns no rows (INSERT, UPDATE, ...).
  Status Run();
  // Steps through every remaining row and returns `read(*this)` for each, in order.
  template <typename Read>
  auto ReadAll(Read read) -> Result<std::vector<decltype(read(std::declval<const SqliteStatement&>()))>> {
    std::vector<decltype(read(std::declval<const SqliteStatement&>()))> rows;
    while (true) {
      ASSIGN_OR_RETURN(bool has_row, Step());
      if (!has_row) break;
      rows.push_back(read(*this));
    }
    return rows;
  }

  bool IsNull(int column) const;
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  // The column's exact bytes (embedded NULs included); empty for NULL.
  std::string ColumnText(int column) const;
  std::optional<std::string> ColumnOptionalText(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;

 private:
  friend class SqliteDb;
  SqliteStatement(sqlite3* db, sqlite3_stmt* statement) : db_(db), statement_(statement) {}
  Status BindResult(int code, int index);

  sqlite3* db_;
  sqlite3_stmt* statement_;
};

// An open connection. Move-only; closes on destruction.
class SqliteDb {
 public:
  // Opens (creating if needed) the database at `path`; ":memory:" gives a private in-memory one.
  static Result<SqliteDb> Open(const std::string& path);

  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  // Runs SQL text with no parameters (schema scripts, pragmas, BEGIN/COMMIT).
  Status Execute(const std::string& sql);
  Result<SqliteStatement> Prepare(std::string_view sql);
  // Runs a query that yields one integer (e.g. "PRAGMA user_version").
  Result<int64_t> QueryInt64(std::string_view sql);
  int64_t LastInsertRowId() const;
  // Rows changed by the latest INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// An IMMEDIATE transaction (takes the write lock at once, so it never fails half-way for lack of
// it). Rolls back on destruction unless committed.
class SqliteTransaction {
 public:
  static Result<SqliteTransaction> Begin(SqliteDb& db);
  // A deferred, read-only one instead: in WAL mode its statements all see the database as of its
  // first read, whatever other connections commit meanwhile.
  static Result<SqliteTransaction> BeginRead(SqliteDb& db);

  SqliteTransaction(SqliteTransaction&& other) noexcept;
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;
  ~SqliteTransaction();

  Status Commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;  // null once committed, rolled back or moved from
};

// Wraps `message` in a Status whose code follows SQLite's result `code`: a constraint violation
// is InvalidArgument, a locked database Unavailable, API misuse Internal, anything else IoError.
Status SqliteStatus(int code, const std::string& message);

}  // namespace kforge
