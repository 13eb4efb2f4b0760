// `kforge bench --slurm`: the suite as a Slurm job array, one shard per array element, and a merge
// job that summarizes the shards' reports once every element has ended. Slurm places the work;
// kforge only writes the batch scripts (OUT/slurm/bench.sbatch, merge.sbatch), submits them with
// sbatch and, when asked, follows the merge job with squeue. OUT, the binary and the workspaces
// must be on a filesystem every node sees. Thread-compatible.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "llm/sleeper.h"
#include "sandbox/process_runner.h"

namespace kforge {

// What an array element's command line holds where its shard number goes; the script passes
// Slurm's variable there.
inline constexpr const char* kArrayTaskId = "${SLURM_ARRAY_TASK_ID}";

struct SlurmBenchPlan {
  std::filesystem::path out;       // absolute: the bench folder; the scripts and logs go to out/slurm
  int shards = 1;                  // array elements
  // Element I runs this, every kArrayTaskId in it replaced by I (e.g. "--shard", "${SLURM_ARRAY_TASK_ID}/4").
  std::vector<std::string> shard_command;
  std::vector<std::string> merge_command;  // the summary of all the shards (bench --no-run)
  std::vector<std::string> sbatch_args;    // the user's, passed through to both submissions
};

// `word` as one shell word: single-quoted unless it is made of safe characters only; each
// kArrayTaskId in it becomes "${SLURM_ARRAY_TASK_ID}", expanded by the shell.
std::string ShellWord(const std::string& word);

// The two batch scripts' text. Their #SBATCH lines set the job names and where the output goes
// (out/slurm/shard-<array id>_<I>.out, merge-<job id>.out and .err); the user's sbatch arguments,
// given on the command line, take precedence over them. The merge script also writes its command's
// exit status to out/slurm/merge-<job id>.status.
std::string ShardScript(const SlurmBenchPlan& plan);
std::string MergeScript(const SlurmBenchPlan& plan);

std::filesystem::path SlurmFolder(const std::filesystem::path& out);  // out/slurm
std::filesystem::path MergeOutputPath(const std::filesystem::path& out, const std::string& job_id);
std::filesystem::path MergeStatusPath(const std::filesystem::path& out, const std::string& job_id);

// The sbatch command lines: the array, then the merge job that waits for every element to end.
std::vector<std::string> ArraySubmission(const SlurmBenchPlan& plan, const std::filesystem::path& script);
std::vector<std::string> MergeSubmission(const SlurmBenchPlan& plan, const std::string& array_id,
                                         const std::filesystem::path& script);

// The job id in `sbatch --parsable`'s output ("123" or "123;cluster", possibly after warnings).
// InvalidArgument when there is none.
Result<std::string> ParseParsableJobId(const std::string& output);

struct SubmittedBench {
  std::string array_id;
  std::string merge_id;
};

// Writes both scripts and submits them. InvalidArgument, with sbatch's words, when sbatch is not
// there or refuses a job (a refused merge job cancels the array it would have followed).
Result<SubmittedBench> SubmitSlurmBench(const SlurmBenchPlan& plan, ProcessRunner& runner);

// Whether `job_id` is still pending or running, from `squeue -h -j ID -o %T`: a job squeue no
// longer knows, or one in a final state, has ended. Unavailable when squeue fails otherwise.
Result<bool> SlurmJobActive(const std::string& job_id, ProcessRunner& runner);

// Polls until `job_id` has ended, first every `first_poll_s`, then less often (at most every
// `max_poll_s`). Unavailable after several squeue failures in a row.
Status WaitForSlurmJob(const std::string& job_id, ProcessRunner& runner, Sleeper& sleeper,
                       double first_poll_s = 1, double max_poll_s = 30);

// `kforge serve --eval --slurm-workers N`: N array elements, each a `kforge worker` that connects
// back to the service and judges its jobs inside the element's allocation (its GPUs).
struct SlurmWorkerPlan {
  std::filesystem::path folder;       // absolute: the script and the workers' logs go here
  int workers = 1;                    // array elements
  std::vector<std::string> command;   // element I runs this (kArrayTaskId replaced by I)
  std::vector<std::string> sbatch_args;
};

std::string WorkerScript(const SlurmWorkerPlan& plan);
// Writes folder/worker.sbatch and submits it as an array; returns the array's job id.
// InvalidArgument, with sbatch's words, when sbatch is not there or refuses it.
Result<std::string> SubmitSlurmWorkers(const SlurmWorkerPlan& plan, ProcessRunner& runner);
// Cancels a job (every element of an array); Unavailable when scancel fails.
Status CancelSlurmJob(const std::string& job_id, ProcessRunner& runner);

}  // namespace kforge
