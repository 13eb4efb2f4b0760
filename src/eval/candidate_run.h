// The zygote's run_candidate reply, parsed once at the boundary into types: a key renamed or
// missing on the worker's side is an error here (the evaluation's infra_error), never a check
// that silently reads a default. `result` is the candidate process's own result.json: untrusted,
// and absent when the process died before writing it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kforge {

// One runtime finding the harness inside the candidate's process raised.
struct RuntimeFinding {
  std::string check;
  std::string message;
};

// The error the candidate's process reported: compile_error, runtime_error, crashed or
// harness_error (the harness itself failed), with the phase it happened in.
struct CandidateError {
  std::string kind;
  std::string phase;
  std::string message;
};

// The timed calls, as the harness in the candidate's process measured them (timing.py): per call
// the device time between its events, the host time around them, and how long the device was
// still busy after the end event. The three lists are required and of one length, so a report that
// leaves out the host or late times cannot switch the timer and side-stream checks off.
struct CandidateTiming {
  std::string method;  // "cuda_events" or "host_clock"
  bool meaningful = false;
  std::vector<double> samples_ms;
  std::vector<double> host_ms;
  std::vector<double> late_ms;
  double backlog_ms = 0;  // the launch backlog built before the timed calls
  Json l2_flush_bytes;    // as reported (for the evidence)
};

// Which kernels ran in the profiled call and whose they are (provenance.py): the share of device
// time (launches on the CPU) in kernels the candidate authored, and the library kernels that
// compute. Both are required: strict mode's library-compute check reads the names.
struct CandidateProvenance {
  double authored_share = 0;
  std::vector<std::string> library_compute_names;
  Json raw;  // the whole trace, for the evidence
};

// result.json, as the candidate's process wrote it.
struct CandidateResult {
  std::optional<CandidateError> error;
  std::vector<RuntimeFinding> findings;
  std::optional<CandidateTiming> timing;  // absent when the run did not time (correctness only, or it failed earlier)
  std::optional<CandidateProvenance> provenance;  // absent when the run ended before its profiled call
  Json kernel_counters;  // the kernels' hardware counters under Nsight Compute (kernel_profile.py), or null
  Json tuning;      // the configurations its @triton.autotune kernels chose (a hint only)
  Json sandbox;     // the process's own account of its set-up
  Json phase_s;     // seconds per phase
  Json compile_ahead;  // what compiling its kernels before the first call did (compile_ahead.py), or null
  Json raw;         // the whole of it, for the evidence
};

struct CandidateRun {
  std::optional<int> exit_code;  // when the process exited
  std::optional<int> signal;     // when a signal ended it
  std::string signal_name;
  std::string killed_for;        // "" or "timeout", "memory_limit", "process_limit" (the zygote killed it)
  double wall_s = 0;
  int64_t peak_rss_bytes = 0;    // its whole process tree's, proportional set size
  int peak_processes = 0;
  Json isolation_seen;           // namespaces and seccomp mode, as the zygote saw them from outside
  std::vector<std::string> sandbox_violations;  // what the audit hooks refused
  std::vector<std::string> tampered_paths;      // protected files changed while it ran
  std::string private_dir;
  std::string stdout_tail;
  std::string stderr_tail;
  std::optional<CandidateResult> result;        // absent: the process wrote none
};

Result<CandidateRun> ParseCandidateRun(const Json& reply);

}  // namespace kforge
