#include "sandbox/subprocess.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge {
namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// What the forked child sets up before exec, all prepared before fork.
struct ChildSetup {
  const char* program;
  char* const* argv;
  char* const* envp;
  int output_fd;
  int request_read;
  int response_write;
  const char* working_dir;
  const cpu_set_t* cpus;  // null: the parent's affinity
  pid_t die_with;         // the parent's pid when the child must die with it, else 0
};

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const ChildSetup& setup) {
  setpgid(0, 0);
  if (setup.die_with != 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != setup.die_with) _exit(125);  // the parent ended before prctl took effect
  }
  signal(SIGPIPE, SIG_DFL);  // kforge ignores it; an ignored signal would stay ignored across exec
  // A blocked signal stays blocked across exec: the child starts with none blocked, whatever the
  // spawning thread waits for (sigwait, sigtimedwait).
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (setup.cpus != nullptr && sched_setaffinity(0, sizeof(cpu_set_t), setup.cpus) != 0) _exit(124);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(setup.output_fd, 1);
  dup2(setup.output_fd, 2);
  if (setup.request_read >= 0) {
    // Move both ends above 4 first so that dup2 onto 3 and 4 cannot clobber either.
    int request_copy = fcntl(setup.request_read, F_DUPFD, 10);
    int response_copy = fcntl(setup.response_write, F_DUPFD, 10);
    dup2(request_copy, 3);
    dup2(response_copy, 4);
  }
  int keep = setup.request_read >= 0 ? 5 : 3;
  for (int fd = keep; fd < 4096; ++fd) close(fd);
  if (setup.working_dir[0] != '\0' && chdir(setup.working_dir) != 0) _exit(126);
  execve(setup.program, setup.argv, setup.envp);
  const char message[] = "kforge: cannot execute the program\n";
  ssize_t ignored = write(2, message, sizeof(message) - 1);
  (void)ignored;
  _exit(127);
}

// The PATH of a child's environment (the usual folders when it has none).
std::string PathOf(const std::vector<std::string>& environment) {
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& entry : environment) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  return path;
}

}  // namespace

Result<std::string> FindProgram(const std::string& name, const std::vector<std::string>& environment) {
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return Status::NotFound(name + " is not an executable file");
  }
  const std::string path = PathOf(environment);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return Status::NotFound(name + " is not on the PATH (" + path + ")");
}

std::string ExitStatus::ToString() const {
  if (exited) return "exited with code " + std::to_string(code);
  const char* name = strsignal(code);
  return "killed by signal " + std::to_string(code) + (name ? std::string(" (") + name + ")" : "");
}

Result<std::unique_ptr<Subprocess>> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("no program to run");
  // One not found is exec'd by its bare name, which fails in the child with 127 and says so.
  auto found = FindProgram(options.argv[0], options.environment);
  std::string program = found.ok() ? *found : options.argv[0];
  std::string working_dir = options.working_dir.string();
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : options.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return Status::InvalidArgument("no CPU core " + std::to_string(cpu));
    CPU_SET(cpu, &cpus);
  }
  int output_pipe[2] = {-1, -1}, request_pipe[2] = {-1, -1}, response_pipe[2] = {-1, -1};
  if (!options.output_file.empty()) {
    output_pipe[1] = open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (output_pipe[1] < 0) {
      return Status::IoError("cannot open " + options.output_file.string() + ": " + std::strerror(errno));
    }
  } else if (pipe2(output_pipe, O_CLOEXEC) != 0) {
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  if (options.with_channel && (pipe2(request_pipe, O_CLOEXEC) != 0 || pipe2(response_pipe, O_CLOEXEC) != 0)) {
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> argv, envp;
  for (const auto& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (const auto& entry : options.environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  const ChildSetup setup{program.c_str(), argv.data(), envp.data(), output_pipe[1], request_pipe[0], response_pipe[1],
                         working_dir.c_str(), options.cpus.empty() ? nullptr : &cpus,
                         options.die_with_parent ? getpid() : 0};

  pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) ExecChild(setup);

  setpgid(pid, pid);  // also from the parent, so the group exists before anyone signals it
  std::unique_ptr<Subprocess> process(new Subprocess());
  process->pid_ = pid;
  process->output_limit_ = options.output_limit_bytes;
  close(output_pipe[1]);
  if (options.with_channel) {
    close(request_pipe[0]);
    close(response_pipe[1]);
    process->request_fd_ = request_pipe[1];
    process->response_fd_ = response_pipe[0];
  }
  if (output_pipe[0] < 0) {
    process->output_ended_ = true;  // nothing captured: the output goes to the file
    return process;
  }
  int output_read = output_pipe[0];
  process->output_thread_ = std::thread([raw = process.get(), output_read] { raw->CaptureOutput(output_read); });
  return process;
}

void Subprocess::CaptureOutput(int fd) {
  char buffer[4096];
  while (true) {
    ssize_t count = read(fd, buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    std::lock_guard<std::mutex> lock(output_mutex_);
    output_tail_.append(buffer, static_cast<size_t>(count));
    if (output_tail_.size() > output_limit_) output_tail_.erase(0, output_tail_.size() - output_limit_);
  }
  close(fd);
  std::lock_guard<std::mutex> lock(output_mutex_);
  output_ended_ = true;
  output_done_.notify_all();
}

bool Subprocess::WaitForOutputEnd(double timeout_s) {
  std::unique_lock<std::mutex> lock(output_mutex_);
  return output_done_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return output_ended_; });
}

std::string Subprocess::OutputTail() const {
  std::lock_guard<std::mutex> lock(output_mutex_);
  return output_tail_;
}

bool Subprocess::IsRunning() {
  if (reaped_) return false;
  int status = 0;
  pid_t done;
  do {
    done = waitpid(pid_, &status, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == 0) return true;
  reaped_ = true;
  exit_status_ = WIFEXITED(status) ? ExitStatus{true, WEXITSTATUS(status)} : ExitStatus{false, WTERMSIG(status)};
  return false;
}

void Subprocess::KillGroup() {
  if (!reaped_) kill(-pid_, SIGKILL);
}

ExitStatus Subprocess::Wait() {
  if (reaped_) return exit_status_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  reaped_ = true;
  exit_status_ = WIFEXITED(status) ? ExitStatus{true, WEXITSTATUS(status)} : ExitStatus{false, WTERMSIG(status)};
  return exit_status_;
}

Subprocess::~Subprocess() {
  CloseIfOpen(request_fd_);
  CloseIfOpen(response_fd_);
  // A worker that reads the end of its requests exits on its own and cleans up after itself
  // (the zygote removes its candidates' folders); one that is busy is killed after a moment.
  for (int i = 0; i < 100 && !reaped_ && IsRunning(); ++i) usleep(10000);
  if (!reaped_) {
    KillGroup();
    Wait();
  } else {
    kill(-pid_, SIGKILL);  // descendants that outlived the leader
  }
  if (output_thread_.joinable()) output_thread_.join();
}

}  // namespace kforge
