#include "store/schema.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = SqliteDb::Open(":memory:");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::make_unique<SqliteDb>(std::move(db).value());
  }

  int Version() { return SchemaVersion(*db_).value(); }

  bool HasTable(const std::string& name) {
    auto statement = db_->Prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?");
    return statement.ok() && statement->BindAll(name).ok() && statement->Step().value();
  }

  std::unique_ptr<SqliteDb> db_;
};

TEST_F(SchemaTest, VersionsAreConsecutiveFromOne) {
  const auto& migrations = StoreMigrations();
  for (size_t i = 0; i < migrations.size(); ++i) EXPECT_EQ(migrations[i].version, static_cast<int>(i + 1));
  EXPECT_EQ(LatestSchemaVersion(), static_cast<int>(migrations.size()));
}

TEST_F(SchemaTest, FreshDatabaseGetsEveryTable) {
  EXPECT_EQ(Version(), 0);
  ASSERT_TRUE(MigrateSchema(*db_).ok());
  EXPECT_EQ(Version(), LatestSchemaVersion());
  for (const char* table : {"environments", "candidates", "tasks", "runs", "evaluations", "measurements", "llm_calls"}) {
    EXPECT_TRUE(HasTable(table)) << table;
  }
}

TEST_F(SchemaTest, MigratingTwiceIsANoOp) {
  ASSERT_TRUE(MigrateSchema(*db_).ok());
  Status again = MigrateSchema(*db_);
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(Version(), LatestSchemaVersion());
}

TEST_F(SchemaTest, AVersionOneStoreGainsTheTuningTable) {
  const std::vector<Migration> first = {StoreMigrations().front()};
  ASSERT_TRUE(MigrateSchema(*db_, first).ok());
  EXPECT_EQ(Version(), 1);
  EXPECT_FALSE(HasTable("tuning"));
  ASSERT_TRUE(MigrateSchema(*db_).ok());
  EXPECT_EQ(Version(), LatestSchemaVersion());
  EXPECT_TRUE(HasTable("tuning"));
  EXPECT_TRUE(HasTable("baselines"));
  EXPECT_TRUE(HasTable("evaluations"));
}

TEST_F(SchemaTest, MigrationsApplyInOrderAndAFailedOneLeavesNoTrace) {
  std::vector<Migration> migrations = {
      {1, "first", "CREATE TABLE a (x INTEGER);"},
      {2, "broken", "CREATE TABLE b (x INTEGER); INSERT INTO missing VALUES (1);"},
  };
  Status status = MigrateSchema(*db_, migrations);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("schema version 2 (broken)"), std::string::npos) << status.ToString();
  EXPECT_EQ(Version(), 1);
  EXPECT_TRUE(HasTable("a"));
  EXPECT_FALSE(HasTable("b"));

  migrations[1].sql = "ALTER TABLE a ADD COLUMN y TEXT; CREATE TABLE b (x INTEGER);";
  ASSERT_TRUE(MigrateSchema(*db_, migrations).ok());
  EXPECT_EQ(Version(), 2);
  EXPECT_TRUE(HasTable("b"));
}

TEST_F(SchemaTest, DatabaseFromNewerKforgeIsRefused) {
  std::vector<Migration> newer = {{1, "one", "CREATE TABLE a (x INTEGER);"}, {2, "two", "CREATE TABLE b (x INTEGER);"}};
  ASSERT_TRUE(MigrateSchema(*db_, newer).ok());
  newer.pop_back();
  Status status = MigrateSchema(*db_, newer);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("schema version 2"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("newer kforge"), std::string::npos) << status.ToString();
  EXPECT_EQ(Version(), 2);
}

TEST_F(SchemaTest, ForeignDatabaseIsRefused) {
  ASSERT_TRUE(db_->Execute("CREATE TABLE someone_elses (x INTEGER)").ok());
  Status status = MigrateSchema(*db_);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a kforge store"), std::string::npos) << status.ToString();
  EXPECT_EQ(Version(), 0);
  EXPECT_FALSE(HasTable("evaluations"));
}

}  // namespace
}  // namespace kforge
