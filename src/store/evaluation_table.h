// Reads and writes the evaluations and measurements tables of a migrated store database. Used
// by Store, which holds its mutex around every call; not thread-safe on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace kforge {

// Inserts `record` (stamped `created_at`) and its measurements in one transaction; returns the
// new id. Nothing is written when any part fails.
Result<int64_t> InsertEvaluation(SqliteDb& db, const EvaluationRecord& record, const std::string& created_at);

// The evaluation `id` with its measurements; NotFound when absent.
Result<EvaluationRecord> SelectEvaluation(SqliteDb& db, int64_t id);

// Summaries matching `filter`, newest first (ties broken by id).
Result<std::vector<EvaluationSummary>> SelectEvaluationSummaries(SqliteDb& db, const EvaluationFilter& filter);

// The newest evaluation under `key` whose verdict is not infra_error.
Result<std::optional<EvaluationRecord>> SelectLatestEvaluation(SqliteDb& db, const EvaluationKey& key);

}  // namespace kforge
