#include "store/sqlite_db.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kforge {
namespace {

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = SqliteDb::Open(":memory:");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::make_unique<SqliteDb>(std::move(db).value());
    ASSERT_TRUE(db_->Execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT UNIQUE)").ok());
  }

  int64_t RowCount() { return db_->QueryInt64("SELECT count(*) FROM t").value(); }

  Status Insert(int64_t i, std::optional<double> r, std::optional<std::string> s) {
    ASSIGN_OR_RETURN(SqliteStatement statement, db_->Prepare("INSERT INTO t (i, r, s) VALUES (?, ?, ?)"));
    RETURN_IF_ERROR(statement.BindAll(i, r, s));
    return statement.Run();
  }

  std::unique_ptr<SqliteDb> db_;
};

TEST_F(SqliteDbTest, BoundValuesReadBackExactly) {
  const char bytes[] = "a 'quoted' \"value\"\n\0with a NUL and \xF0\x9F\x9A\x80";
  const std::string text(bytes, sizeof(bytes) - 1);
  ASSERT_TRUE(Insert(std::numeric_limits<int64_t>::max(), 0.1, text).ok());
  auto statement = db_->Prepare("SELECT i, r, s FROM t");
  ASSERT_TRUE(statement.ok());
  ASSERT_TRUE(statement->Step().value());
  EXPECT_EQ(statement->ColumnInt64(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(statement->ColumnDouble(1), 0.1);
  EXPECT_EQ(statement->ColumnText(2), text);
  EXPECT_FALSE(statement->Step().value());
}

TEST_F(SqliteDbTest, EmptyStringIsNotNullAndNullIsNullopt) {
  ASSERT_TRUE(Insert(1, std::nullopt, std::string()).ok());
  ASSERT_TRUE(Insert(2, std::numeric_limits<double>::quiet_NaN(), std::nullopt).ok());
  auto statement = db_->Prepare("SELECT r, s FROM t ORDER BY i");
  ASSERT_TRUE(statement.ok());
  ASSERT_TRUE(statement->Step().value());
  EXPECT_EQ(statement->ColumnOptionalDouble(0), std::nullopt);
  EXPECT_EQ(statement->ColumnOptionalText(1), std::optional<std::string>(""));
  ASSERT_TRUE(statement->Step().value());
  EXPECT_TRUE(statement->IsNull(0)) << "NaN is stored as NULL";
  EXPECT_TRUE(std::isnan(statement->ColumnDouble(0)));
  EXPECT_EQ(statement->ColumnOptionalText(1), std::nullopt);
}

TEST_F(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  {
    auto transaction = SqliteTransaction::Begin(*db_);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(Insert(1, 1.0, "dropped").ok());
  }
  EXPECT_EQ(RowCount(), 0);
  {
    auto transaction = SqliteTransaction::Begin(*db_);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(Insert(2, 2.0, "kept").ok());
    ASSERT_TRUE(transaction->Commit().ok());
  }
  EXPECT_EQ(RowCount(), 1);
}

TEST_F(SqliteDbTest, BadSqlIsAnError) {
  auto statement = db_->Prepare("SELEC 1");
  ASSERT_FALSE(statement.ok());
  EXPECT_NE(statement.status().message().find("syntax error"), std::string::npos) << statement.status().ToString();
}

TEST_F(SqliteDbTest, ConstraintViolationIsInvalidArgumentAndKeepsEarlierRows) {
  ASSERT_TRUE(Insert(1, 1.0, "same").ok());
  Status status = Insert(2, 2.0, "same");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("UNIQUE"), std::string::npos) << status.ToString();
  EXPECT_EQ(RowCount(), 1);
}

TEST_F(SqliteDbTest, ChangesCountsUpdatedRows) {
  ASSERT_TRUE(Insert(1, 1.0, "a").ok());
  ASSERT_TRUE(Insert(2, 1.0, "b").ok());
  ASSERT_TRUE(db_->Execute("UPDATE t SET r = 3 WHERE r = 1").ok());
  EXPECT_EQ(db_->Changes(), 2);
  EXPECT_EQ(db_->LastInsertRowId(), 2);
}

}  // namespace
}  // namespace kforge
