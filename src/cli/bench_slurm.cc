// `kforge bench --slurm`: the bench's shards as a Slurm job array and their summary as a job after
// them (search/slurm_array.h); with --wait, the summary printed once that job has ended.
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/given_options.h"
#include "core/files.h"
#include "core/log.h"
#include "sandbox/environment.h"
#include "search/slurm_array.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Options that say how to submit, or that each job sets for itself.
const std::set<std::string> kSubmissionOptions = {"--slurm", "--slurm-shards", "--sbatch-arg", "--wait", "--shard",
                                                  "--out"};
const std::set<std::string> kPathOptions = {"--workspace", "--python"};

struct JobCommands {
  std::vector<std::string> shard, merge;
};

// The array element's and the merge job's command lines: this binary with absolute paths for the
// suite, --out, the workspace and the interpreter, the user's other options as given.
JobCommands BuildJobCommands(const BenchFlags& flags, const CommonOptions& common, const CLI::App& command,
                             const fs::path& out, int shards) {
  const CLI::App& global = *command.get_parent();
  const bool shared_workspace = global.get_option("--workspace")->count() > 0;
  const auto environment = ProcessEnvironment();
  std::error_code ec;
  const std::string binary = fs::read_symlink("/proc/self/exe", ec).string();
  const std::string suite = fs::absolute(flags.suite).lexically_normal().string();
  const std::vector<std::string> global_options = GivenOptions(global, kPathOptions);
  auto job = [&](const std::string& workspace, const std::set<std::string>& leave_out) {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), global_options.begin(), global_options.end());
    argv.insert(argv.end(), {"--workspace=" + workspace, "--python=" + AbsolutePython(common, environment),
                             command.get_name(), suite, "--out=" + out.string()});
    for (std::string& option : GivenOptions(command, leave_out)) argv.push_back(std::move(option));
    return argv;
  };
  // Array elements may land on different nodes, where one SQLite store cannot be shared (its
  // locks do not work across NFS clients): each element gets its own unless --workspace names one.
  const fs::path own = SlurmFolder(out) / "workspace-";
  JobCommands commands;
  commands.shard = job(shared_workspace ? fs::absolute(common.workspace).string() : own.string() + kArrayTaskId,
                       kSubmissionOptions);
  commands.shard.push_back(fmt::format("--shard={}/{}", kArrayTaskId, shards));
  std::set<std::string> merge_leave_out = kSubmissionOptions;
  merge_leave_out.insert({"--fresh", "--gpus"});
  commands.merge = job(shared_workspace ? fs::absolute(common.workspace).string() : own.string() + "merge",
                       merge_leave_out);
  commands.merge.push_back("--no-run");
  return commands;
}

// The merge job's verdict once it has ended: its table printed, its exit status returned.
int ReportMergeJob(const fs::path& out, const std::string& merge_id) {
  auto status_text = ReadFile(MergeStatusPath(out, merge_id));
  const fs::path output = MergeOutputPath(out, merge_id);
  if (!status_text.ok()) {
    return UsageError(fmt::format(
        "the merge job {} ended without summarizing (no {}); see {} and the shards' logs in {}", merge_id,
        MergeStatusPath(out, merge_id).string(), output.string(), SlurmFolder(out).string()));
  }
  if (auto table = ReadFile(output); table.ok()) std::fputs(table->c_str(), stdout);
  int status = 2;
  std::sscanf(status_text->c_str(), "%d", &status);
  return status;
}

}  // namespace

int SubmitBenchToSlurm(const BenchFlags& flags, const CommonOptions& common, const BenchTasks& found,
                       const CLI::App& command) {
  if (!flags.shard.empty()) return UsageError("--slurm makes its own shards (--slurm-shards); drop --shard");
  if (flags.no_run) return UsageError("--slurm submits a run and --no-run runs nothing: give one of them");
  const int shards = flags.slurm_shards == 0 ? static_cast<int>(found.tasks.size()) : flags.slurm_shards;
  if (shards < 1 || shards > static_cast<int>(found.tasks.size())) {
    return UsageError(fmt::format("--slurm-shards must be between 1 and the suite's {} task(s) (got {})",
                                  found.tasks.size(), flags.slurm_shards));
  }
  SlurmBenchPlan plan;
  plan.out = fs::absolute(flags.out).lexically_normal();
  plan.shards = shards;
  plan.sbatch_args = flags.sbatch_args;
  JobCommands commands = BuildJobCommands(flags, common, command, plan.out, shards);
  plan.shard_command = std::move(commands.shard);
  plan.merge_command = std::move(commands.merge);

  auto runner = MakeSubprocessRunner(AsEnvironmentList(ProcessEnvironment()), 120);
  auto submitted = SubmitSlurmBench(plan, *runner);
  if (!submitted.ok()) return UsageError(submitted.status().message());
  const fs::path slurm = SlurmFolder(plan.out);
  if (flags.json && !flags.wait) {
    std::printf("%s\n", Json{{"array_job", submitted->array_id}, {"merge_job", submitted->merge_id},
                             {"shards", shards}, {"out", plan.out.string()}}.dump().c_str());
    return 0;
  }
  if (!flags.json) {
    std::printf("submitted job array %s (%d shard(s) of %s) and job %s, which summarizes them once all have ended\n"
                "  scripts: %s/bench.sbatch, %s/merge.sbatch\n"
                "  logs:    %s/shard-%s_<I>.out, %s\n"
                "  follow:  squeue -j %s,%s   kforge serve --bench %s\n"
                "  result:  %s/bench.json when job %s has ended\n",
                submitted->array_id.c_str(), shards, found.suite.string().c_str(), submitted->merge_id.c_str(),
                slurm.c_str(), slurm.c_str(), slurm.c_str(), submitted->array_id.c_str(),
                MergeOutputPath(plan.out, submitted->merge_id).c_str(), submitted->array_id.c_str(),
                submitted->merge_id.c_str(), plan.out.c_str(), plan.out.c_str(), submitted->merge_id.c_str());
    std::fflush(stdout);
  }
  if (!flags.wait) return 0;
  LogInfo("waiting for job {} (the summary, after job array {})", submitted->merge_id, submitted->array_id);
  auto sleeper = MakeRealSleeper();
  if (Status waited = WaitForSlurmJob(submitted->merge_id, *runner, *sleeper); !waited.ok()) {
    return UsageError(waited.message());
  }
  return ReportMergeJob(plan.out, submitted->merge_id);
}

}  // namespace kforge
