#include "eval/reference_replies.h"

namespace kforge {

Result<PreparedReference> ParsePreparedReference(const Json& reply, bool candidate) {
  if (!reply.is_object()) return Status::Internal("the trusted worker's prepare reply is not a JSON object");
  JsonReader read(reply, "the trusted worker's prepare reply");
  PreparedReference prepared;
  ASSIGN_OR_RETURN(prepared.input_bytes, read.Required<int64_t>("input_bytes"));
  ASSIGN_OR_RETURN(prepared.output_bytes, read.Required<int64_t>("output_bytes"));
  ASSIGN_OR_RETURN(prepared.parameter_bytes, read.Required<int64_t>("parameter_bytes"));
  ASSIGN_OR_RETURN(prepared.flops, read.Required<int64_t>("flops"));
  ASSIGN_OR_RETURN(prepared.outputs, read.List("outputs"));
  for (const Json& output : prepared.outputs) {
    JsonReader fields(output, "an output of the reference");
    ASSIGN_OR_RETURN(bool dense, fields.Required<bool>("dense"));
    prepared.outputs_dense.push_back(dense);
  }
  ASSIGN_OR_RETURN(prepared.mutated_buffers, read.Required<Json>("mutated_buffers"));
  ASSIGN_OR_RETURN(prepared.second_size, read.Required<Json>("second_size"));
  ASSIGN_OR_RETURN(prepared.sets, read.Required<Json>("sets"));
  ASSIGN_OR_RETURN(prepared.cpu_sizes_applied, read.Required<bool>("cpu_sizes_applied"));
  if (!candidate) return prepared;
  ASSIGN_OR_RETURN(prepared.memory, read.Required<Json>("memory"));
  JsonReader plan(prepared.memory, "the trusted worker's memory plan");
  ASSIGN_OR_RETURN(prepared.candidate_limit_bytes, plan.Required<int64_t>("candidate_limit_bytes"));
  if (const Json refusal = read.Loose("does_not_fit"); !refusal.is_null()) {
    if (!refusal.is_string()) return Status::Internal("the trusted worker's prepare reply: 'does_not_fit' is not a string");
    prepared.does_not_fit = refusal.get<std::string>();
    return prepared;
  }
  ASSIGN_OR_RETURN(prepared.state, read.Required<Json>("state"));
  ASSIGN_OR_RETURN(prepared.shared, read.Required<Json>("shared"));
  return prepared;
}

Result<ReferenceTiming> ParseReferenceTiming(const Json& reply, const std::string& where) {
  if (!reply.is_object()) return Status::Internal(where + " is not a JSON object");
  JsonReader read(reply, where);
  ReferenceTiming timing;
  ASSIGN_OR_RETURN(timing.samples_ms, read.Required<std::vector<double>>("samples_ms"));
  ASSIGN_OR_RETURN(timing.iteration_ms, read.Required<std::vector<double>>("iteration_ms"));
  if (timing.samples_ms.empty()) return Status::Internal(where + " holds no timed call");
  timing.compile_s = read.Loose("compile_s");
  timing.compile_cache = read.Loose("compile_cache");
  return timing;
}

}  // namespace kforge
