#include "eval/comparison.h"

#include <algorithm>

#include <fmt/format.h>

namespace kforge {
namespace {

Status NotA(const std::string& what, const char* kind) { return Status::Internal(fmt::format("{} is not {}", what, kind)); }

// A problem the worker may leave out (an output that passed has none).
Result<std::string> Problem(const JsonReader& read) {
  Json problem = read.Loose("problem");
  if (problem.is_null()) return std::string();
  if (!problem.is_string()) return Status::Internal("a 'problem' is not a string");
  return problem.get<std::string>();
}

// `list` may be null (a report without per-output detail).
Result<std::vector<OutputCheck>> ParseOutputs(const Json& list, const std::string& where) {
  if (!list.is_null() && !list.is_array()) return NotA(where, "a list");
  std::vector<OutputCheck> outputs;
  for (const Json& entry : list) {
    JsonReader read(entry, "an entry of " + where);
    OutputCheck output;
    ASSIGN_OR_RETURN(output.passed, read.Required<bool>("passed"));
    ASSIGN_OR_RETURN(output.problem, Problem(read));
    outputs.push_back(std::move(output));
  }
  return outputs;
}

Result<CallCheck> ParseCall(const Json& report, const std::string& where) {
  if (!report.is_object()) return NotA(where, "an object");
  JsonReader read(report, where);
  CallCheck call;
  ASSIGN_OR_RETURN(call.passed, read.Required<bool>("passed"));
  ASSIGN_OR_RETURN(call.problem, Problem(read));
  ASSIGN_OR_RETURN(call.outputs, ParseOutputs(read.Loose("outputs"), where + "'s outputs"));
  if (Json buffers = read.Loose("buffers"); !buffers.is_null()) {
    JsonReader fields(buffers, where + "'s buffers");
    BufferCheck check;
    ASSIGN_OR_RETURN(check.passed, fields.Required<bool>("passed"));
    ASSIGN_OR_RETURN(check.problem, Problem(fields));
    ASSIGN_OR_RETURN(check.names, fields.Required<std::vector<std::string>>("names"));
    ASSIGN_OR_RETURN(check.buffers, ParseOutputs(fields.Loose("outputs"), where + "'s buffers"));
    call.buffers = std::move(check);
  }
  return call;
}

}  // namespace

std::string CallCheck::FirstProblem() const {
  if (!problem.empty()) return problem;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].passed) return fmt::format("output {}: {}", i, outputs[i].problem.empty() ? "differs" : outputs[i].problem);
  }
  return "outputs differ";
}

std::string BufferCheck::FirstProblem() const {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].passed) continue;
    std::string name = i < names.size() ? names[i] : fmt::format("#{}", i);
    return fmt::format("buffer {} after the call: {}", name, buffers[i].problem.empty() ? "differs" : buffers[i].problem);
  }
  return problem.empty() ? "the buffers the forward updates differ" : problem;
}

Result<Comparison> ParseComparison(const Json& reply) {
  if (!reply.is_object()) return NotA("the trusted worker's comparison", "a JSON object");
  JsonReader read(reply, "the trusted worker's comparison");
  Comparison comparison;
  if (Json tampered = read.Loose("tampered"); !tampered.is_null()) {
    if (!tampered.is_string()) return NotA("the comparison's 'tampered'", "a string");
    comparison.tampered = tampered.get<std::string>();
    return comparison;
  }
  ASSIGN_OR_RETURN(Json mutations, read.List("input_mutations"));
  for (const Json& entry : mutations) {
    JsonReader fields(entry, "an input mutation");
    InputMutation mutation;
    ASSIGN_OR_RETURN(mutation.call, fields.Required<std::string>("call"));
    ASSIGN_OR_RETURN(mutation.inputs, fields.Required<Json>("inputs"));
    comparison.input_mutations.push_back(std::move(mutation));
  }
  ASSIGN_OR_RETURN(Json sets, read.Object("sets"));
  for (const auto& [name, report] : sets.items()) {
    ASSIGN_OR_RETURN(CallCheck call, ParseCall(report, "input set " + name));
    comparison.sets.emplace_back(name, std::move(call));
  }
  // The seeds' calls came first (JSON objects keep their keys sorted).
  std::stable_partition(comparison.sets.begin(), comparison.sets.end(),
                        [](const auto& set) { return set.first.rfind("seed", 0) == 0; });
  ASSIGN_OR_RETURN(Json probes, read.Object("probes"));
  for (const auto& [name, report] : probes.items()) {
    const std::string where = "probe " + name;
    ProbeCheck probe;
    ASSIGN_OR_RETURN(probe.call, ParseCall(report, where));
    JsonReader fields(report, where);
    ASSIGN_OR_RETURN(probe.target, fields.Required<std::string>("target"));
    ASSIGN_OR_RETURN(probe.unchanged_from_before_rewrite, fields.Required<bool>("unchanged_from_before_rewrite"));
    ASSIGN_OR_RETURN(probe.reference_changed, fields.Required<bool>("reference_changed"));
    comparison.probes.emplace_back(name, std::move(probe));
  }
  ASSIGN_OR_RETURN(std::optional<Json> repeat, read.Optional<Json>("repeat"));
  if (repeat) {
    ASSIGN_OR_RETURN(CallCheck call, ParseCall(*repeat, "the repeated call"));
    comparison.repeat = std::move(call);
  }
  ASSIGN_OR_RETURN(std::optional<Json> resized, read.Optional<Json>("resized"));
  if (resized) {
    JsonReader fields(*resized, "the call at the second size");
    ResizedCheck check;
    ASSIGN_OR_RETURN(check.checked, fields.Required<bool>("checked"));
    check.refused = !fields.Loose("refused").is_null();
    if (check.checked && !check.refused) {
      ASSIGN_OR_RETURN(check.call, ParseCall(*resized, "the call at the second size"));
    }
    comparison.resized = std::move(check);
  }
  ASSIGN_OR_RETURN(Json timed, read.List("timed"));
  for (const Json& entry : timed) {
    TimedCheck check;
    ASSIGN_OR_RETURN(check.check, ParseCall(entry, "a timed call"));
    ASSIGN_OR_RETURN(Json call, JsonReader(entry, "a timed call").Required<Json>("call"));
    check.call = call.is_string() ? call.get<std::string>() : call.dump();
    comparison.timed.push_back(std::move(check));
  }
  ASSIGN_OR_RETURN(comparison.handoff_gaps_ms, read.Required<std::vector<double>>("handoff_gaps_ms"));
  return comparison;
}

}  // namespace kforge
