// `kforge serve`: a local web dashboard over the store (LLM runs) and bench folders, live while
// other kforge processes write to them. Pages are the report pages (report/html_report.h) inside
// a live frame: a server-sent event stream per page says when what it shows changed, and the page
// fetches its new body without reloading. Binds to localhost unless told otherwise; reads only
// (routes added through `extend` may do more). With tokens, every request must carry one.
// Thread-safe: requests are served on the HTTP library's thread pool.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "serve/access_tokens.h"
#include "store/store.h"

namespace httplib {
class Server;
}

namespace kforge {

struct DashboardOptions {
  std::vector<std::filesystem::path> bench_folders;  // `kforge bench --out` folders to follow
  double poll_s = 0.5;       // how often an event stream looks for changes
  double heartbeat_s = 10;   // a comment line keeps idle streams open through proxies
  const AccessTokens* tokens = nullptr;  // when set, every request needs one of their bearer tokens
  std::function<void(httplib::Server&)> extend;  // adds more routes to the same server (the evaluation service)
  int threads = 32;          // requests served at once (long polls and event streams each hold one)
};

class Dashboard {
 public:
  // `store` may be null (no LLM runs shown); it must outlive the dashboard.
  Dashboard(Store* store, DashboardOptions options);
  ~Dashboard();  // stops serving

  // Binds `host`:`port` (0: any free port) and serves on a thread of its own. Unavailable when
  // the address cannot be bound.
  Status Start(const std::string& host, int port);
  int port() const { return port_; }
  void Stop();

  // What the pages show, for tests and the event stream: the body of a page and a fingerprint
  // of the data behind it (equal fingerprints, equal pages).
  std::string IndexBody() const;
  std::string Fingerprint(const std::string& page) const;

 private:
  void Route();

  Store* store_;
  DashboardOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int port_ = 0;
};

}  // namespace kforge
