// Evaluations and measurements, exercised through the Store that owns them.
#include "store/evaluation_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "store/sqlite_db.h"
#include "store/store.h"
#include "store_fixture.h"

namespace kforge {
namespace {

// The task, candidate and environment an evaluation refers to, recorded in `store`.
struct Subjects {
  std::string task_hash;
  std::string candidate_hash;
  int64_t environment_id = 0;
};

Subjects RecordSubjects(Store& store, const std::string& task_name = "1_matmul_relu") {
  Subjects subjects;
  subjects.task_hash = store.RecordTask("tasks/" + task_name + ".py", task_name, "# task " + task_name).value();
  subjects.candidate_hash = store.RecordCandidate("# candidate for " + task_name, "file:model_new.py").value();
  subjects.environment_id = store.RecordEnvironment({{"gpu", "H200"}, {"torch", "2.11.0"}}).value();
  return subjects;
}

EvaluationRecord MakeEvaluation(const Subjects& subjects, const std::string& verdict_kind = "accepted") {
  EvaluationRecord record;
  record.task_hash = subjects.task_hash;
  record.candidate_hash = subjects.candidate_hash;
  record.environment_id = subjects.environment_id;
  record.kind = EvaluationKind::kCandidate;
  record.device = "cuda:0";
  record.precision = "fp32";
  record.mode = "strict";
  record.verdict = verdict_kind;
  record.verdict_kind = verdict_kind;
  record.message = "";
  record.duration_s = 12.5;
  return record;
}

class EvaluationTableTest : public InMemoryStoreTest {
 protected:
  void SetUp() override {
    InMemoryStoreTest::SetUp();
    subjects_ = RecordSubjects(*store_);
  }

  int64_t Record(const EvaluationRecord& record) {
    auto id = store_->RecordEvaluation(record);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : -1;
  }

  std::vector<int64_t> ListedIds(const EvaluationFilter& filter) {
    auto summaries = store_->ListEvaluations(filter);
    EXPECT_TRUE(summaries.ok()) << summaries.status().ToString();
    std::vector<int64_t> ids;
    if (summaries.ok()) {
      for (const EvaluationSummary& summary : *summaries) ids.push_back(summary.id);
    }
    return ids;
  }

  EvaluationKey KeyOf(const EvaluationRecord& record) {
    return {record.task_hash, record.candidate_hash, record.environment_id, record.device, record.precision,
            record.mode};
  }

  Subjects subjects_;
};

TEST_F(EvaluationTableTest, RoundTripsEveryFieldWithMeasurementsAndEvidence) {
  ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize", Json::object()).ok());
  clock_.SetIso8601("2026-03-01T10:00:00Z");
  EvaluationRecord record = MakeEvaluation(subjects_, "rejected_hack");
  record.run_id = "run-1";
  record.verdict = "rejected_hack(input_mutation)";
  record.check_name = "input_mutation";
  record.message = "input 0 changed after the call:\n  max |Δ| = 1.5 at [3, \"x\"]";
  record.speedup = 1.75;
  record.candidate_ms = 0.125;
  record.reference_ms = 0.21875;
  record.evidence = {{"seeds", {17, 4242}},
                     {"stderr", "line 1\nline \"2\"\n"},
                     {"max_abs_error", 1.5},
                     {"note", "ünïcødé 🚀"}};
  record.measurements = {
      {"candidate_ms", {0.125, 0.126, 0.124}, 0.125, 0.124, 0.126, "ms"},
      {"reference_eager_ms", {0.21875}, 0.21875, 0.2, 0.25, "ms"},
  };
  int64_t id = Record(record);

  auto stored = store_->GetEvaluation(id);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->id, id);
  EXPECT_EQ(stored->created_at, "2026-03-01T10:00:00Z");
  EXPECT_EQ(stored->run_id, record.run_id);
  EXPECT_EQ(stored->task_hash, record.task_hash);
  EXPECT_EQ(stored->candidate_hash, record.candidate_hash);
  EXPECT_EQ(stored->environment_id, record.environment_id);
  EXPECT_EQ(stored->kind, EvaluationKind::kCandidate);
  EXPECT_EQ(stored->device, "cuda:0");
  EXPECT_EQ(stored->precision, "fp32");
  EXPECT_EQ(stored->mode, "strict");
  EXPECT_EQ(stored->verdict, record.verdict);
  EXPECT_EQ(stored->verdict_kind, "rejected_hack");
  EXPECT_EQ(stored->check_name, record.check_name);
  EXPECT_EQ(stored->message, record.message);
  EXPECT_EQ(stored->speedup, record.speedup);
  EXPECT_EQ(stored->candidate_ms, record.candidate_ms);
  EXPECT_EQ(stored->reference_ms, record.reference_ms);
  EXPECT_EQ(stored->duration_s, 12.5);
  EXPECT_EQ(stored->evidence, record.evidence);
  EXPECT_EQ(stored->measurements, record.measurements);
}

TEST_F(EvaluationTableTest, AbsentNumbersStayAbsentAndNanStaysNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EvaluationRecord record = MakeEvaluation(subjects_, "compile_error");
  record.speedup = nan;  // stored as NULL, read back as absent
  record.measurements = {{"candidate_ms", {1.0, nan}, nan, nan, nan, "ms"}};
  record.evidence = {{"stderr", std::string("bad \xff byte")}};
  auto stored = store_->GetEvaluation(Record(record));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->speedup, std::nullopt);
  EXPECT_EQ(stored->candidate_ms, std::nullopt);
  EXPECT_EQ(stored->check_name, std::nullopt);
  EXPECT_EQ(stored->run_id, std::nullopt);
  ASSERT_EQ(stored->measurements.size(), 1u);
  const MeasurementRecord& measurement = stored->measurements[0];
  ASSERT_EQ(measurement.samples.size(), 2u);
  EXPECT_EQ(measurement.samples[0], 1.0);
  EXPECT_TRUE(std::isnan(measurement.samples[1]));
  EXPECT_TRUE(std::isnan(measurement.median));
  EXPECT_EQ(stored->evidence["stderr"], "bad \xEF\xBF\xBD byte");
}

TEST_F(EvaluationTableTest, BaselineHasNoCandidate) {
  EvaluationRecord baseline = MakeEvaluation(subjects_);
  baseline.kind = EvaluationKind::kBaseline;
  EXPECT_EQ(store_->RecordEvaluation(baseline).status().code(), StatusCode::kInvalidArgument);
  baseline.candidate_hash.reset();
  auto stored = store_->GetEvaluation(Record(baseline));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->kind, EvaluationKind::kBaseline);
  EXPECT_EQ(stored->candidate_hash, std::nullopt);

  EvaluationRecord candidate = MakeEvaluation(subjects_);
  candidate.candidate_hash.reset();
  EXPECT_EQ(store_->RecordEvaluation(candidate).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EvaluationTableTest, MissingIdIsNotFound) {
  auto missing = store_->GetEvaluation(4242);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("4242"), std::string::npos);
}

TEST_F(EvaluationTableTest, ListIsNewestFirstAndLimited) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 25; ++i) {
    // Two evaluations per second: equal timestamps are ordered by id.
    clock_.SetIso8601("2026-03-01T10:00:" + std::string(i / 2 < 10 ? "0" : "") + std::to_string(i / 2) + "Z");
    ids.push_back(Record(MakeEvaluation(subjects_)));
  }
  std::vector<int64_t> newest_first(ids.rbegin(), ids.rend());

  EvaluationFilter filter;
  EXPECT_EQ(ListedIds(filter), std::vector<int64_t>(newest_first.begin(), newest_first.begin() + 20));
  filter.limit = 3;
  EXPECT_EQ(ListedIds(filter), std::vector<int64_t>(newest_first.begin(), newest_first.begin() + 3));
  filter.limit = 0;
  EXPECT_EQ(ListedIds(filter), newest_first);
}

TEST_F(EvaluationTableTest, ListFiltersByTaskNameVerdictKindAndRun) {
  Subjects softmax = RecordSubjects(*store_, "23_softmax");
  ASSERT_TRUE(store_->StartRun("run-1", "kforge optimize", Json::object()).ok());
  int64_t matmul_accepted = Record(MakeEvaluation(subjects_, "accepted"));
  int64_t matmul_wrong = Record(MakeEvaluation(subjects_, "wrong_output"));
  EvaluationRecord in_run = MakeEvaluation(softmax, "accepted");
  in_run.run_id = "run-1";
  int64_t softmax_accepted = Record(in_run);

  auto summaries = store_->ListEvaluations({});
  ASSERT_TRUE(summaries.ok());
  ASSERT_EQ(summaries->size(), 3u);
  EXPECT_EQ((*summaries)[0].task_name, "23_softmax");
  EXPECT_EQ((*summaries)[0].verdict_kind, "accepted");

  EvaluationFilter by_task;
  by_task.task_name_contains = "matmul";
  EXPECT_EQ(ListedIds(by_task), (std::vector<int64_t>{matmul_wrong, matmul_accepted}));
  by_task.task_name_contains = "%";  // matched literally, not as a LIKE wildcard
  EXPECT_EQ(ListedIds(by_task), std::vector<int64_t>{});

  EvaluationFilter by_verdict;
  by_verdict.verdict_kind = "accepted";
  EXPECT_EQ(ListedIds(by_verdict), (std::vector<int64_t>{softmax_accepted, matmul_accepted}));
  by_verdict.task_name_contains = "_matmul";
  EXPECT_EQ(ListedIds(by_verdict), std::vector<int64_t>{matmul_accepted});

  EvaluationFilter by_run;
  by_run.run_id = "run-1";
  EXPECT_EQ(ListedIds(by_run), std::vector<int64_t>{softmax_accepted});
}

TEST_F(EvaluationTableTest, LatestEvaluationSkipsInfraErrorsAndOtherKeys) {
  EvaluationRecord record = MakeEvaluation(subjects_, "accepted");
  auto none = store_->LatestEvaluation(KeyOf(record));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, std::nullopt);

  clock_.SetIso8601("2026-03-01T10:00:00Z");
  Record(MakeEvaluation(subjects_, "wrong_output"));
  clock_.SetIso8601("2026-03-01T11:00:00Z");
  record.measurements = {{"candidate_ms", {1.0}, 1.0, 1.0, 1.0, "ms"}};
  int64_t newest_useful = Record(record);
  clock_.SetIso8601("2026-03-01T12:00:00Z");
  Record(MakeEvaluation(subjects_, "infra_error"));
  EvaluationRecord on_cpu = MakeEvaluation(subjects_, "timeout");
  on_cpu.device = "cpu";
  int64_t cpu_id = Record(on_cpu);

  auto latest = store_->LatestEvaluation(KeyOf(record));
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->id, newest_useful);
  EXPECT_EQ((*latest)->measurements, record.measurements);
  EXPECT_EQ((*store_->LatestEvaluation(KeyOf(on_cpu)))->id, cpu_id);

  EvaluationKey other_environment = KeyOf(record);
  other_environment.environment_id = store_->RecordEnvironment({{"gpu", "A100"}}).value();
  EXPECT_EQ(*store_->LatestEvaluation(other_environment), std::nullopt);

  EvaluationKey baseline_key = KeyOf(record);
  baseline_key.candidate_hash.reset();
  EXPECT_EQ(*store_->LatestEvaluation(baseline_key), std::nullopt);
  EvaluationRecord baseline = MakeEvaluation(subjects_);
  baseline.kind = EvaluationKind::kBaseline;
  baseline.candidate_hash.reset();
  int64_t baseline_id = Record(baseline);
  EXPECT_EQ((*store_->LatestEvaluation(baseline_key))->id, baseline_id);
}

TEST_F(EvaluationTableTest, FailedWriteReturnsStatusAndKeepsEarlierRows) {
  int64_t kept = Record(MakeEvaluation(subjects_));
  EvaluationRecord dangling = MakeEvaluation(subjects_);
  dangling.environment_id = 999;
  auto failed = store_->RecordEvaluation(dangling);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("FOREIGN KEY"), std::string::npos) << failed.status().ToString();

  dangling = MakeEvaluation(subjects_);
  dangling.candidate_hash = "not-a-recorded-candidate";
  EXPECT_FALSE(store_->RecordEvaluation(dangling).ok());

  EXPECT_EQ(ListedIds({}), std::vector<int64_t>{kept});
  EXPECT_TRUE(store_->GetEvaluation(kept).ok());
  EXPECT_GT(Record(MakeEvaluation(subjects_)), kept) << "the store still accepts writes";
}

// A measurement that cannot be written takes its evaluation row down with it.
TEST_F(StoreFileTest, EvaluationAndMeasurementsAreOneTransaction) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  Subjects subjects = RecordSubjects(*store);
  {
    auto db = SqliteDb::Open(db_path_.string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Execute("CREATE TRIGGER poison BEFORE INSERT ON measurements WHEN NEW.name = 'poison' "
                            "BEGIN SELECT RAISE(ABORT, 'poisoned measurement'); END;")
                    .ok());
  }
  EvaluationRecord record = MakeEvaluation(subjects);
  record.measurements = {{"candidate_ms", {1.0}, 1.0, 1.0, 1.0, "ms"}, {"poison", {}, 0, 0, 0, "ms"}};
  auto failed = store->RecordEvaluation(record);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("poisoned measurement"), std::string::npos) << failed.status().ToString();
  EXPECT_TRUE(store->ListEvaluations({})->empty());

  record.measurements.pop_back();
  auto id = store->RecordEvaluation(record);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(store->GetEvaluation(*id)->measurements.size(), 1u);
}

}  // namespace
}  // namespace kforge
