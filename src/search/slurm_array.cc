#include "search/slurm_array.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "core/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

bool SafeInShell(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string SingleQuoted(const std::string& text) {
  if (SafeInShell(text)) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A file name for an #SBATCH --output line: Slurm reads '%' as the start of a pattern ("%%" is
// one '%'), and a name with blanks or quotes needs double quotes around it.
std::string SlurmFileName(const std::string& path, const std::string& pattern) {
  std::string escaped;
  for (char c : path) escaped += c == '%' ? std::string("%%") : std::string(1, c);
  escaped += pattern;
  if (escaped.find_first_of(" \t\"'\\") == std::string::npos) return escaped;
  std::string quoted = "\"";
  for (char c : escaped) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return quoted + "\"";
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& word : argv) line += (line.empty() ? "" : " ") + ShellWord(word);
  return line;
}

std::string Header(const std::string& what, const std::string& writer = "kforge bench --slurm") {
  return "#!/bin/bash\n# " + what + "\n# Written by `" + writer + "`; OUT, the kforge binary and the workspace must be on a\n"
         "# filesystem every node sees.\n";
}

Result<std::string> Submit(const std::vector<std::string>& argv, const std::string& what, ProcessRunner& runner) {
  auto submitted = runner.Run(argv);
  if (!submitted.ok()) {
    if (submitted.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument("Slurm's sbatch is not on the PATH here: run kforge on a machine that submits "
                                     "Slurm jobs (a login node)");
    }
    return Status::InvalidArgument(fmt::format("sbatch did not submit {}: {}", what, submitted.status().message()));
  }
  if (!submitted->ok()) {
    return Status::InvalidArgument(fmt::format("sbatch refused {} ({}): {}", what, submitted->status.ToString(),
                                               submitted->output));
  }
  auto id = ParseParsableJobId(submitted->output);
  if (!id.ok()) return id.status().WithContext("submitting " + what);
  return id;
}

}  // namespace

std::string ShellWord(const std::string& word) {
  if (word.empty()) return "''";
  const std::string token = kArrayTaskId;
  std::string shell;
  size_t start = 0;
  while (true) {
    const size_t found = word.find(token, start);
    const std::string piece = word.substr(start, found == std::string::npos ? std::string::npos : found - start);
    if (!piece.empty()) shell += SingleQuoted(piece);
    if (found == std::string::npos) break;
    shell += "\"" + token + "\"";
    start = found + token.size();
  }
  return shell;
}

fs::path SlurmFolder(const fs::path& out) { return out / "slurm"; }

fs::path MergeOutputPath(const fs::path& out, const std::string& job_id) {
  return SlurmFolder(out) / ("merge-" + job_id + ".out");
}

fs::path MergeStatusPath(const fs::path& out, const std::string& job_id) {
  return SlurmFolder(out) / ("merge-" + job_id + ".status");
}

std::string ShardScript(const SlurmBenchPlan& plan) {
  const std::string slurm = SlurmFolder(plan.out).string();
  std::ostringstream script;
  script << Header(fmt::format("kforge bench as a Slurm job array: element I of {} runs shard I/{} into {}.", plan.shards,
                               plan.shards, plan.out.string()))
         << "#SBATCH --job-name=kforge-bench\n"
         << "#SBATCH --output=" << SlurmFileName(slurm + "/shard-", "%A_%a.out") << "\n"
         << "exec " << CommandLine(plan.shard_command) << "\n";
  return script.str();
}

std::string MergeScript(const SlurmBenchPlan& plan) {
  const std::string slurm = SlurmFolder(plan.out).string();
  std::ostringstream script;
  script << Header(fmt::format("The summary of kforge bench's {} shards in {}, once every array element has ended.",
                               plan.shards, plan.out.string()))
         << "#SBATCH --job-name=kforge-bench-merge\n"
         << "#SBATCH --output=" << SlurmFileName(slurm + "/merge-", "%j.out") << "\n"
         << "#SBATCH --error=" << SlurmFileName(slurm + "/merge-", "%j.err") << "\n"
         << CommandLine(plan.merge_command) << "\n"
         << "status=$?\n"
         << "echo \"$status\" > " << SingleQuoted(slurm + "/merge-") << "\"${SLURM_JOB_ID}\"" << SingleQuoted(".status")
         << "\n"
         << "exit \"$status\"\n";
  return script.str();
}

std::vector<std::string> ArraySubmission(const SlurmBenchPlan& plan, const fs::path& script) {
  std::vector<std::string> argv = {"sbatch", "--parsable", fmt::format("--array=1-{}", plan.shards)};
  argv.insert(argv.end(), plan.sbatch_args.begin(), plan.sbatch_args.end());
  argv.push_back(script.string());
  return argv;
}

std::vector<std::string> MergeSubmission(const SlurmBenchPlan& plan, const std::string& array_id, const fs::path& script) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--dependency=afterany:" + array_id};
  argv.insert(argv.end(), plan.sbatch_args.begin(), plan.sbatch_args.end());
  argv.push_back(script.string());
  return argv;
}

Result<std::string> ParseParsableJobId(const std::string& output) {
  // "123" or "123;cluster" on a line of its own; sbatch's warnings come on lines of their own.
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(" \t\r");
    const size_t last = line.find_last_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::string word = line.substr(first, last - first + 1);
    const std::string id = word.substr(0, word.find(';'));
    if (!id.empty() && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) return id;
  }
  return Status::InvalidArgument("sbatch printed no job id: '" + output + "'");
}

Result<SubmittedBench> SubmitSlurmBench(const SlurmBenchPlan& plan, ProcessRunner& runner) {
  const fs::path folder = SlurmFolder(plan.out);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return Status::InvalidArgument("cannot create " + folder.string() + ": " + ec.message());
  const fs::path shard_script = folder / "bench.sbatch", merge_script = folder / "merge.sbatch";
  RETURN_IF_ERROR(WriteFile(shard_script, ShardScript(plan)));
  RETURN_IF_ERROR(WriteFile(merge_script, MergeScript(plan)));
  fs::permissions(shard_script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  fs::permissions(merge_script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  SubmittedBench submitted;
  ASSIGN_OR_RETURN(submitted.array_id, Submit(ArraySubmission(plan, shard_script), "the job array", runner));
  auto merge = Submit(MergeSubmission(plan, submitted.array_id, merge_script), "the merge job", runner);
  if (!merge.ok()) {
    (void)runner.Run({"scancel", submitted.array_id});
    return Status::InvalidArgument(merge.status().message() +
                                   fmt::format(" (job array {} was cancelled)", submitted.array_id));
  }
  submitted.merge_id = *merge;
  return submitted;
}

Result<bool> SlurmJobActive(const std::string& job_id, ProcessRunner& runner) {
  auto queued = runner.Run({"squeue", "-h", "-j", job_id, "-o", "%T"});
  if (!queued.ok()) return Status::Unavailable("squeue: " + queued.status().message());
  if (!queued->ok()) {
    // A job ended long enough ago is forgotten: squeue then no longer knows its id.
    if (queued->output.find("Invalid job id") != std::string::npos) return false;
    return Status::Unavailable(fmt::format("squeue -j {} {}: {}", job_id, queued->status.ToString(), queued->output));
  }
  static const char* const kFinal[] = {"COMPLETED", "FAILED",    "CANCELLED",     "TIMEOUT",  "NODE_FAIL",
                                       "PREEMPTED", "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE", "SPECIAL_EXIT"};
  std::istringstream lines(queued->output);
  for (std::string state; lines >> state;) {
    if (std::find(std::begin(kFinal), std::end(kFinal), state) == std::end(kFinal)) return true;
  }
  return false;
}

Status WaitForSlurmJob(const std::string& job_id, ProcessRunner& runner, Sleeper& sleeper, double first_poll_s,
                       double max_poll_s) {
  constexpr int kFailuresInARow = 5;
  double interval = first_poll_s;
  int failures = 0;
  while (true) {
    auto active = SlurmJobActive(job_id, runner);
    if (active.ok() && !*active) return Status::Ok();
    failures = active.ok() ? 0 : failures + 1;
    if (failures >= kFailuresInARow) return active.status();
    sleeper.Sleep(interval);
    interval = std::min(interval * 1.5, max_poll_s);
  }
}

std::string WorkerScript(const SlurmWorkerPlan& plan) {
  std::ostringstream script;
  script << Header(fmt::format("{} kforge worker(s) as a Slurm job array, judging for an evaluation service.", plan.workers),
                   "kforge serve --eval --slurm-workers")
         << "#SBATCH --job-name=kforge-worker\n"
         << "#SBATCH --output=" << SlurmFileName(plan.folder.string() + "/worker-", "%A_%a.out") << "\n"
         << "exec " << CommandLine(plan.command) << "\n";
  return script.str();
}

Result<std::string> SubmitSlurmWorkers(const SlurmWorkerPlan& plan, ProcessRunner& runner) {
  std::error_code ec;
  fs::create_directories(plan.folder, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {}: {}", plan.folder.string(), ec.message()));
  const fs::path script = plan.folder / "worker.sbatch";
  RETURN_IF_ERROR(WriteFile(script, WorkerScript(plan)));
  std::vector<std::string> argv = {"sbatch", "--parsable", fmt::format("--array=1-{}", plan.workers)};
  argv.insert(argv.end(), plan.sbatch_args.begin(), plan.sbatch_args.end());
  argv.push_back(script.string());
  return Submit(argv, "the workers' job array", runner);
}

Status CancelSlurmJob(const std::string& job_id, ProcessRunner& runner) {
  auto cancelled = runner.Run({"scancel", job_id});
  if (!cancelled.ok()) return Status::Unavailable("scancel " + job_id + ": " + cancelled.status().message());
  if (!cancelled->ok()) return Status::Unavailable("scancel " + job_id + ": " + cancelled->output);
  return Status::Ok();
}

}  // namespace kforge
