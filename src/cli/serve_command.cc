#include <csignal>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "serve/dashboard.h"

namespace kforge {
namespace {

struct ServeFlags {
  std::vector<std::string> benches;
  std::string bind = "127.0.0.1";
  int port = 8765;
};

int Serve(const ServeFlags& flags, const CommonOptions& common) {
  auto workspace = Workspace::Open(common);
  if (!workspace.ok()) return UsageError(workspace.status().message());
  if (flags.bind != "127.0.0.1" && flags.bind != "localhost" && flags.bind != "::1") {
    std::fprintf(stderr, "kforge: serving on %s: anyone who can reach this address can read the store (task sources, "
                 "prompts and replies)\n", flags.bind.c_str());
  }
  DashboardOptions options;
  for (const std::string& bench : flags.benches) options.bench_folders.push_back(bench);
  // SIGINT and SIGTERM end the server cleanly: they are waited for here, not handled.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Dashboard dashboard((*workspace)->store(), options);
  if (Status started = dashboard.Start(flags.bind, flags.port); !started.ok()) return UsageError(started.message());
  const std::string host = flags.bind.find(':') != std::string::npos ? "[" + flags.bind + "]" : flags.bind;
  std::printf("serving http://%s:%d/ (Ctrl-C stops)\n", host.c_str(), dashboard.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  dashboard.Stop();
  return 0;
}

}  // namespace

CommandRunner AttachServe(CLI::App& app, const CommonOptions& common) {
  auto flags = std::make_shared<ServeFlags>();
  app.add_option("--bench", flags->benches, "a `kforge bench --out` folder to follow (repeat for several)");
  app.add_option("--bind", flags->bind, "address to listen on (other than localhost: readable by anyone who reaches it)")
      ->capture_default_str();
  app.add_option("--port", flags->port, "port (0: any free one, printed)")->capture_default_str();
  return [flags, &common] { return Serve(*flags, common); };
}

}  // namespace kforge
