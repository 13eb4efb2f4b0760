#include "eval/evaluation.h"

namespace kforge {

Json SummaryToJson(const SampleSummary& summary) {
  return {{"count", summary.count}, {"median", summary.median}, {"ci_low", summary.ci_low},
          {"ci_high", summary.ci_high}, {"min", summary.min}, {"max", summary.max}};
}

Json SpeedupToJson(const SpeedupEstimate& speedup) {
  return {{"speedup", speedup.speedup}, {"ci_low", speedup.ci_low}, {"ci_high", speedup.ci_high},
          {"significant", speedup.significant}};
}

bool MeasurablyFaster(const Evaluation& candidate, const Evaluation& incumbent, double min_gain) {
  auto timed = [](const Evaluation& e) { return e.speedup.has_value() && e.timings_meaningful; };
  return timed(candidate) && timed(incumbent) && candidate.speedup->speedup > incumbent.speedup->speedup * (1 + min_gain);
}

Json Evaluation::ToJson() const {
  Json json = {{"verdict", verdict.ToString()},
               {"verdict_kind", ToString(verdict.kind)},
               {"check", verdict.check.empty() ? Json() : Json(verdict.check)},
               {"message", verdict.message},
               {"device", device},
               {"timings_meaningful", timings_meaningful},
               {"duration_s", duration_s},
               {"reference_timing_s", reference_timing_s},
               {"evidence", evidence}};
  if (candidate_ms) json["candidate_ms"] = SummaryToJson(*candidate_ms);
  if (reference_ms) json["reference_ms"] = SummaryToJson(*reference_ms);
  if (speedup) json["speedup"] = SpeedupToJson(*speedup);
  if (authored_share) json["authored_share"] = *authored_share;
  return json;
}


namespace {

std::optional<SampleSummary> SummaryFromJson(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  SampleSummary summary;
  summary.count = JsonGet<int>(json, "count", 0);
  summary.median = JsonGet<double>(json, "median", 0);
  summary.ci_low = JsonGet<double>(json, "ci_low", 0);
  summary.ci_high = JsonGet<double>(json, "ci_high", 0);
  summary.min = JsonGet<double>(json, "min", 0);
  summary.max = JsonGet<double>(json, "max", 0);
  return summary;
}

}  // namespace

Result<Evaluation> EvaluationFromJson(const Json& json) {
  if (!json.is_object() || !JsonField(json, "verdict_kind").is_string() || !JsonField(json, "evidence").is_object()) {
    return Status::InvalidArgument("an evaluation needs verdict_kind (a string) and evidence (an object)");
  }
  std::optional<VerdictKind> kind = ParseVerdictKind(json["verdict_kind"].get<std::string>());
  if (!kind) return Status::InvalidArgument("unknown verdict_kind '" + json["verdict_kind"].get<std::string>() + "'");
  Evaluation evaluation;
  evaluation.verdict.kind = *kind;
  evaluation.verdict.check = JsonGet<std::string>(json, "check", "");
  evaluation.verdict.message = JsonGet<std::string>(json, "message", "");
  evaluation.device = JsonGet<std::string>(json, "device", "");
  evaluation.timings_meaningful = JsonGet<bool>(json, "timings_meaningful", false);
  evaluation.duration_s = JsonGet<double>(json, "duration_s", 0);
  evaluation.reference_timing_s = JsonGet<double>(json, "reference_timing_s", 0);
  evaluation.evidence = json["evidence"];
  evaluation.candidate_ms = SummaryFromJson(JsonField(json, "candidate_ms"));
  evaluation.reference_ms = SummaryFromJson(JsonField(json, "reference_ms"));
  if (const Json& speedup = JsonField(json, "speedup"); speedup.is_object()) {
    evaluation.speedup = SpeedupEstimate{JsonGet<double>(speedup, "speedup", 0), JsonGet<double>(speedup, "ci_low", 0),
                                         JsonGet<double>(speedup, "ci_high", 0), JsonGet<bool>(speedup, "significant", false)};
  }
  evaluation.authored_share = JsonNumber(json, "authored_share");
  return evaluation;
}

}  // namespace kforge
