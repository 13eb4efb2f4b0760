#include "tasks/task.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr char kReluTask[] =
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n\n\ndef get_inputs():\n    return [torch.randn(16)]\n\n\n"
    "def get_init_inputs():\n    return []\n";
// sha256sum of kReluTask, computed outside kforge.
constexpr char kReluTaskSha256[] = "c737d92beb8cb8ce1979c464719c783448d0fe211888f3a336daf5751e09c99e";

class TaskFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir(fs::temp_directory_path(), "kforge_tasks_test_");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = fs::canonical(*dir);
  }
  void TearDown() override { RemoveTreeQuietly(dir_); }

  fs::path Write(const std::string& relative, const std::string& contents) {
    fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    Status written = WriteFile(path, contents);
    EXPECT_TRUE(written.ok()) << written.ToString();
    return path;
  }

  fs::path dir_;
};

TEST_F(TaskFileTest, ReadsNameHashSourceAndAbsolutePath) {
  fs::path path = Write("level1/01_relu.py", kReluTask);
  auto task = ReadTaskFile(dir_ / "level1" / ".." / "level1" / "01_relu.py");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->path, path);
  EXPECT_TRUE(task->path.is_absolute());
  EXPECT_EQ(task->name, "level1/01_relu");
  EXPECT_EQ(task->source, kReluTask);
  EXPECT_EQ(task->hash, kReluTaskSha256);
}

TEST_F(TaskFileTest, RelativePathBecomesAbsolute) {
  fs::path path = Write("suite/relu.py", kReluTask);
  fs::path previous = fs::current_path();
  fs::current_path(dir_);
  auto task = ReadTaskFile("suite/relu.py");
  fs::current_path(previous);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->path, path);
  EXPECT_EQ(task->name, "suite/relu");
}

TEST_F(TaskFileTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadTaskFile(dir_ / "missing.py").status().code(), StatusCode::kNotFound);
  fs::create_directories(dir_ / "folder.py");
  EXPECT_EQ(ReadTaskFile(dir_ / "folder.py").status().code(), StatusCode::kNotFound);
}

struct ModelClassCase {
  std::string file_name;
  std::string source;
  StatusCode expected;
};

void PrintTo(const ModelClassCase& param, std::ostream* out) { *out << param.file_name; }

class ModelClassTest : public TaskFileTest, public ::testing::WithParamInterface<ModelClassCase> {};

TEST_P(ModelClassTest, AcceptsOnlyPythonFilesDefiningModelAtTopLevel) {
  fs::path path = Write(GetParam().file_name, GetParam().source);
  auto task = ReadTaskFile(path);
  EXPECT_EQ(task.ok() ? StatusCode::kOk : task.status().code(), GetParam().expected)
      << GetParam().file_name << ": " << GetParam().source;
}

INSTANTIATE_TEST_SUITE_P(
    Sources, ModelClassTest,
    ::testing::Values(ModelClassCase{"task.py", kReluTask, StatusCode::kOk},
                      ModelClassCase{"first_line.py", "class Model(nn.Module):\n    pass\n", StatusCode::kOk},
                      ModelClassCase{"no_base.py", "x = 1\nclass Model:\n    pass\n", StatusCode::kOk},
                      ModelClassCase{"spaced.py", "x = 1\nclass  Model (nn.Module):\n    pass\n", StatusCode::kOk},
                      ModelClassCase{"crlf.py", "import torch\r\nclass Model(nn.Module):\r\n    pass\r\n",
                                     StatusCode::kOk},
                      ModelClassCase{"task.txt", kReluTask, StatusCode::kInvalidArgument},
                      ModelClassCase{"no_extension", kReluTask, StatusCode::kInvalidArgument},
                      ModelClassCase{"empty.py", "", StatusCode::kInvalidArgument},
                      ModelClassCase{"candidate.py", "class ModelNew(nn.Module):\n    pass\n",
                                     StatusCode::kInvalidArgument},
                      ModelClassCase{"nested.py", "def f():\n    class Model(nn.Module):\n        pass\n",
                                     StatusCode::kInvalidArgument},
                      ModelClassCase{"comment.py", "# class Model(nn.Module):\nx = 1\n", StatusCode::kInvalidArgument},
                      ModelClassCase{"helper.py", "def get_inputs():\n    return []\n",
                                     StatusCode::kInvalidArgument}),
    [](const auto& info) {
      std::string name = info.param.file_name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST_F(TaskFileTest, InvalidArgumentSaysWhatIsWrong) {
  auto not_python = ReadTaskFile(Write("task.txt", kReluTask));
  EXPECT_NE(not_python.status().message().find(".py"), std::string::npos) << not_python.status().message();
  auto no_model = ReadTaskFile(Write("helper.py", "x = 1\n"));
  EXPECT_NE(no_model.status().message().find("class Model"), std::string::npos) << no_model.status().message();
}

TEST_F(TaskFileTest, FindTasksIsRecursiveSortedAndSkipsNonTasks) {
  Write("suite/z_last.py", kReluTask);
  Write("suite/a/x_task.py", kReluTask);
  Write("suite/a/b/y_task.py", kReluTask);
  Write("suite/a/helper.py", "def helper():\n    return 1\n");
  Write("suite/README.md", "class Model(nn.Module): pass\n");
  Write("suite/notes.txt", kReluTask);
  auto tasks = FindTasks(dir_ / "suite");
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  std::vector<std::string> names;
  for (const auto& task : *tasks) names.push_back(task.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b/y_task", "a/x_task", "suite/z_last"}));
  ASSERT_EQ(tasks->size(), 3u);
  EXPECT_EQ((*tasks)[0].path, dir_ / "suite" / "a" / "b" / "y_task.py");
  EXPECT_EQ((*tasks)[2].hash, kReluTaskSha256);
}

TEST_F(TaskFileTest, FindTasksInAnEmptyFolderFindsNothing) {
  fs::create_directories(dir_ / "empty");
  auto tasks = FindTasks(dir_ / "empty");
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  EXPECT_TRUE(tasks->empty());
}

TEST_F(TaskFileTest, FindTasksInAMissingFolderIsNotFound) {
  EXPECT_EQ(FindTasks(dir_ / "missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FindTasks(Write("file.py", kReluTask)).status().code(), StatusCode::kNotFound);
}

TEST(RepositoryTasksTest, FindsTheBundledSuite) {
  auto tasks = FindTasks(fs::path(KFORGE_SOURCE_DIR) / "tasks");
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  EXPECT_GE(tasks->size(), 40u);
  std::set<std::string> names;
  for (const auto& task : *tasks) {
    EXPECT_TRUE(task.path.is_absolute()) << task.path;
    EXPECT_EQ(task.hash.size(), 64u) << task.name;
    names.insert(task.name);
  }
  EXPECT_EQ(names.size(), tasks->size()) << "two tasks share a name";
  EXPECT_EQ(names.count("level1/01_relu"), 1u);
  EXPECT_TRUE(std::is_sorted(tasks->begin(), tasks->end(),
                             [](const TaskFile& a, const TaskFile& b) { return a.path < b.path; }));
}

}  // namespace
}  // namespace kforge
