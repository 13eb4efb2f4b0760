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
               {"evidence", evidence}};
  if (candidate_ms) json["candidate_ms"] = SummaryToJson(*candidate_ms);
  if (reference_ms) json["reference_ms"] = SummaryToJson(*reference_ms);
  if (speedup) json["speedup"] = SpeedupToJson(*speedup);
  if (authored_share) json["authored_share"] = *authored_share;
  return json;
}

}  // namespace kforge
