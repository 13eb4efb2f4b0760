// kforge: the subcommand table. Wiring only; every command lives in its own file.
#include <sys/prctl.h>

#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/log.h"

namespace {

const kforge::Command kCommands[] = {
    {"optimize", "compile a task into fused Triton kernels, then (with --llm) let kernel writers improve them; "
     "verified and timed by the evaluator", kforge::AttachOptimize},
    {"resume", "continue an interrupted optimize --llm without paying again for recorded replies", kforge::AttachResume},
    {"bench", "optimize every task of a suite folder (resumable) and print the fast_p table", kforge::AttachBench},
    {"eval", "judge candidate kernels against a task: correctness, cheating checks, timing", kforge::AttachEval},
    {"baseline", "time a task's reference: eager and torch.compile", kforge::AttachBaseline},
    {"show", "list stored evaluations, or show one in full", kforge::AttachShow},
    {"report", "write a self-contained HTML report with charts: a bench run, a task, two runs compared, an LLM run",
     kforge::AttachReport},
    {"serve", "a web dashboard over the store and bench folders, live while runs write to them; with --eval, the "
     "evaluator as an HTTP/JSON service", kforge::AttachServe},
    {"worker", "judge candidates for an evaluation service on another machine (kforge serve --eval --remote-workers)",
     kforge::AttachWorker},
    {"export", "every stored attempt (prompt, reply, candidate, verdict, speedup) as a JSONL dataset", kforge::AttachExport},
    {"ir", "capture a task's Model (torch.export) and print its graph IR", kforge::AttachIr},
};

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: no process of the same user (a candidate, a model-written task) may trace this
  // one or read its environment, where provider keys live, through /proc.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"kforge: turns PyTorch programs into verified, faster GPU kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  kforge::CommonOptions common;
  app.add_option("--device", common.device, "auto, cpu or cuda:N")->capture_default_str();
  app.add_option("--precision", common.precision, "declared precision policy: fp32, tf32 or bf16")->capture_default_str();
  app.add_option("--python", common.python, "Python interpreter with torch and triton");
  app.add_option("--workspace", common.workspace, "folder for the store and caches")->capture_default_str();
  app.add_option("--sandbox-user", common.sandbox_user, "unprivileged user candidates run as (when root; '' for none)")
      ->capture_default_str();
  app.add_option("--isolation", common.isolation,
                 "fork: candidates run in processes forked from a warm parent; spawn: a fresh interpreter each")
      ->capture_default_str();
  app.add_flag("--unsafe-no-isolation", common.unsafe_no_isolation,
               "run candidates even where this machine offers no user namespaces to isolate them in (they could "
               "then read your files and reach the network)");
  app.add_flag("-v,--verbose", common.verbose, "more progress output");
  app.add_flag("-q,--quiet", common.quiet, "no progress output");
  // Every subcommand's --help names the global options it honours (all of them, from either side).
  std::string global_options = "Global options, before or after the subcommand (kforge --help):";
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_name() != "--help" && option->get_name() != "--version") global_options += " " + option->get_name();
  }
  std::map<CLI::App*, kforge::CommandRunner> runners;
  for (const auto& command : kCommands) {
    CLI::App* sub = app.add_subcommand(command.name, command.description);
    // The global options work after the subcommand too (`kforge optimize TASK --device cpu`).
    sub->fallthrough();
    sub->footer(global_options);
    runners[sub] = command.attach(*sub, common);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }
  kforge::SetLogLevel(common.quiet ? kforge::LogLevel::kQuiet
                                   : common.verbose ? kforge::LogLevel::kDebug : kforge::LogLevel::kInfo);
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) return run();
  }
  return 2;
}
