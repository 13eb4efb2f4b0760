// Fixtures shared by the store tests: a FakeClock with an in-memory Store, and a private
// temporary folder for tests that need a real database file.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "core/clock.h"
#include "core/files.h"
#include "store/store.h"

namespace kforge {

class InMemoryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::OpenInMemory(clock_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  FakeClock clock_;
  std::unique_ptr<Store> store_;
};

class StoreFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(std::filesystem::temp_directory_path(), "kforge_store_test_");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
    db_path_ = dir_ / "workspace" / ".kforge" / "kforge.db";
  }
  void TearDown() override { RemoveTreeQuietly(dir_); }

  std::unique_ptr<Store> OpenStore() {
    auto store = Store::Open(db_path_, clock_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  FakeClock clock_;
  std::filesystem::path dir_;
  std::filesystem::path db_path_;
};

}  // namespace kforge
