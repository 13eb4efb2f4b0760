#include "store/evaluation_table.h"

#include <limits>

namespace kforge {
namespace {

constexpr char kSelectEvaluation[] = R"sql(
SELECT id, created_at, run_id, task_hash, candidate_hash, environment_id, kind, device, precision,
       mode, verdict, verdict_kind, check_name, message, speedup, candidate_ms, reference_ms,
       duration_s, evidence
FROM evaluations
)sql";

Status ValidateEvaluation(const EvaluationRecord& record) {
  bool is_baseline = record.kind == EvaluationKind::kBaseline;
  if (is_baseline && record.candidate_hash.has_value()) {
    return Status::InvalidArgument("a baseline evaluation has no candidate, but candidate_hash is set");
  }
  if (!is_baseline && !record.candidate_hash.has_value()) {
    return Status::InvalidArgument("a candidate evaluation needs a candidate_hash");
  }
  return Status::Ok();
}

Status InsertMeasurement(SqliteDb& db, int64_t evaluation_id, const MeasurementRecord& measurement) {
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db.Prepare("INSERT INTO measurements (evaluation_id, name, samples, median, ci_low, "
                              "ci_high, unit) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(statement.BindAll(evaluation_id, measurement.name, CanonicalJsonText(Json(measurement.samples)),
                                    measurement.median, measurement.ci_low, measurement.ci_high, measurement.unit));
  return statement.Run();
}

// Samples are a JSON array of numbers; a null (a NaN when written) reads back as NaN.
Result<std::vector<double>> ParseSamples(const std::string& text, const std::string& what) {
  ASSIGN_OR_RETURN(Json samples, ParseJson(text, what));
  if (!samples.is_array()) return Status::IoError(what + " is not a JSON array");
  std::vector<double> values;
  values.reserve(samples.size());
  for (const Json& sample : samples) {
    values.push_back(sample.is_number() ? sample.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
  return values;
}

Result<std::vector<MeasurementRecord>> SelectMeasurements(SqliteDb& db, int64_t evaluation_id) {
  ASSIGN_OR_RETURN(SqliteStatement statement,
                   db.Prepare("SELECT name, samples, median, ci_low, ci_high, unit FROM measurements "
                              "WHERE evaluation_id = ? ORDER BY id"));
  RETURN_IF_ERROR(statement.BindAll(evaluation_id));
  std::vector<MeasurementRecord> measurements;
  while (true) {
    ASSIGN_OR_RETURN(bool has_row, statement.Step());
    if (!has_row) break;
    MeasurementRecord measurement;
    measurement.name = statement.ColumnText(0);
    std::string what = "samples of measurement " + measurement.name + " of evaluation " + std::to_string(evaluation_id);
    ASSIGN_OR_RETURN(measurement.samples, ParseSamples(statement.ColumnText(1), what));
    measurement.median = statement.ColumnDouble(2);
    measurement.ci_low = statement.ColumnDouble(3);
    measurement.ci_high = statement.ColumnDouble(4);
    measurement.unit = statement.ColumnText(5);
    measurements.push_back(std::move(measurement));
  }
  return measurements;
}

// Reads a row of kSelectEvaluation, without its measurements.
Result<EvaluationRecord> ReadEvaluationRow(const SqliteStatement& row) {
  EvaluationRecord record;
  record.id = row.ColumnInt64(0);
  record.created_at = row.ColumnText(1);
  record.run_id = row.ColumnOptionalText(2);
  record.task_hash = row.ColumnText(3);
  record.candidate_hash = row.ColumnOptionalText(4);
  record.environment_id = row.ColumnInt64(5);
  ASSIGN_OR_RETURN(record.kind, ParseEvaluationKind(row.ColumnText(6)));
  record.device = row.ColumnText(7);
  record.precision = row.ColumnText(8);
  record.mode = row.ColumnText(9);
  record.verdict = row.ColumnText(10);
  record.verdict_kind = row.ColumnText(11);
  record.check_name = row.ColumnOptionalText(12);
  record.message = row.ColumnText(13);
  record.speedup = row.ColumnOptionalDouble(14);
  record.candidate_ms = row.ColumnOptionalDouble(15);
  record.reference_ms = row.ColumnOptionalDouble(16);
  record.duration_s = row.ColumnDouble(17);
  ASSIGN_OR_RETURN(record.evidence, ParseJson(row.ColumnText(18), "evidence of evaluation " + std::to_string(record.id)));
  return record;
}

// Steps `statement` once and reads the evaluation it yields, measurements included.
Result<std::optional<EvaluationRecord>> ReadOneEvaluation(SqliteDb& db, SqliteStatement& statement) {
  ASSIGN_OR_RETURN(bool has_row, statement.Step());
  if (!has_row) return std::optional<EvaluationRecord>();
  ASSIGN_OR_RETURN(EvaluationRecord record, ReadEvaluationRow(statement));
  ASSIGN_OR_RETURN(record.measurements, SelectMeasurements(db, record.id));
  return std::optional<EvaluationRecord>(std::move(record));
}

EvaluationSummary ReadSummaryRow(const SqliteStatement& row) {
  EvaluationSummary summary;
  summary.id = row.ColumnInt64(0);
  summary.created_at = row.ColumnText(1);
  summary.task_name = row.ColumnText(2);
  summary.task_hash = row.ColumnText(3);
  summary.candidate_hash = row.ColumnOptionalText(4);
  // The schema's CHECK admits only the two kinds.
  summary.kind = row.ColumnText(5) == "baseline" ? EvaluationKind::kBaseline : EvaluationKind::kCandidate;
  summary.device = row.ColumnText(6);
  summary.precision = row.ColumnText(7);
  summary.mode = row.ColumnText(8);
  summary.verdict = row.ColumnText(9);
  summary.verdict_kind = row.ColumnText(10);
  summary.check_name = row.ColumnOptionalText(11);
  summary.speedup = row.ColumnOptionalDouble(12);
  summary.candidate_ms = row.ColumnOptionalDouble(13);
  summary.reference_ms = row.ColumnOptionalDouble(14);
  summary.duration_s = row.ColumnDouble(15);
  return summary;
}

}  // namespace

Result<int64_t> InsertEvaluation(SqliteDb& db, const EvaluationRecord& record, const std::string& created_at) {
  RETURN_IF_ERROR(ValidateEvaluation(record));
  const std::string context = "recording an evaluation of task " + record.task_hash + ", candidate " +
                              record.candidate_hash.value_or("(baseline)") + ", environment " +
                              std::to_string(record.environment_id);
  ASSIGN_OR_RETURN(SqliteTransaction transaction, SqliteTransaction::Begin(db));
  ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare(R"sql(
INSERT INTO evaluations (created_at, run_id, task_hash, candidate_hash, environment_id, kind, device,
                         precision, mode, verdict, verdict_kind, check_name, message, speedup,
                         candidate_ms, reference_ms, duration_s, evidence)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
)sql"));
  RETURN_IF_ERROR(statement.BindAll(created_at, record.run_id, record.task_hash, record.candidate_hash,
                                    record.environment_id, ToString(record.kind), record.device, record.precision,
                                    record.mode, record.verdict, record.verdict_kind, record.check_name,
                                    record.message, record.speedup, record.candidate_ms, record.reference_ms,
                                    record.duration_s, CanonicalJsonText(record.evidence)));
  RETURN_IF_ERROR(statement.Run().WithContext(context));
  int64_t id = db.LastInsertRowId();
  for (const MeasurementRecord& measurement : record.measurements) {
    RETURN_IF_ERROR(InsertMeasurement(db, id, measurement).WithContext(context));
  }
  RETURN_IF_ERROR(transaction.Commit().WithContext(context));
  return id;
}

Result<EvaluationRecord> SelectEvaluation(SqliteDb& db, int64_t id) {
  ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare(std::string(kSelectEvaluation) + "WHERE id = ?"));
  RETURN_IF_ERROR(statement.BindAll(id));
  ASSIGN_OR_RETURN(std::optional<EvaluationRecord> record, ReadOneEvaluation(db, statement));
  if (!record.has_value()) return Status::NotFound("no evaluation with id " + std::to_string(id));
  return std::move(*record);
}

Result<std::vector<EvaluationSummary>> SelectEvaluationSummaries(SqliteDb& db, const EvaluationFilter& filter) {
  ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare(R"sql(
SELECT e.id, e.created_at, t.name, e.task_hash, e.candidate_hash, e.kind, e.device, e.precision,
       e.mode, e.verdict, e.verdict_kind, e.check_name, e.speedup, e.candidate_ms, e.reference_ms,
       e.duration_s
FROM evaluations e JOIN tasks t ON t.hash = e.task_hash
WHERE instr(t.name, ?1) > 0
  AND (?2 IS NULL OR e.verdict_kind = ?2)
  AND (?3 IS NULL OR e.run_id = ?3)
ORDER BY e.created_at DESC, e.id DESC
LIMIT ?4
)sql"));
  int64_t limit = filter.limit > 0 ? filter.limit : -1;  // a negative LIMIT means none
  RETURN_IF_ERROR(statement.BindAll(filter.task_name_contains, filter.verdict_kind, filter.run_id, limit));
  return statement.ReadAll(ReadSummaryRow);
}

Result<std::optional<EvaluationRecord>> SelectLatestEvaluation(SqliteDb& db, const EvaluationKey& key) {
  ASSIGN_OR_RETURN(SqliteStatement statement, db.Prepare(std::string(kSelectEvaluation) + R"sql(
WHERE task_hash = ? AND candidate_hash IS ? AND environment_id = ? AND device = ? AND precision = ?
  AND mode = ? AND verdict_kind <> 'infra_error'
ORDER BY created_at DESC, id DESC
LIMIT 1
)sql"));
  RETURN_IF_ERROR(statement.BindAll(key.task_hash, key.candidate_hash, key.environment_id, key.device,
                                    key.precision, key.mode));
  return ReadOneEvaluation(db, statement);
}

}  // namespace kforge
