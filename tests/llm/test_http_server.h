// A real HTTP server on 127.0.0.1 (an ephemeral port) for tests that exercise CurlTransport end
// to end: handlers are registered per path before Start(), requests are remembered, and slow
// handlers can wait on `stopping()` so that shutting down never waits for them.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kforge {

struct ReceivedRequest {
  std::string path;
  std::string body;
  std::multimap<std::string, std::string> headers;  // as httplib keeps them (case-insensitive lookup)

  std::string Header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
      if (strcasecmp(key.c_str(), name.c_str()) == 0) return value;
    }
    return "";
  }
};

class TestHttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, int call_index)>;

  ~TestHttpServer() { Stop(); }

  // Every POST to `path` is answered by `handler`, with the index of the call to that path.
  void OnPost(const std::string& path, Handler handler) {
    server_.Post(path, [this, path, handler](const httplib::Request& request, httplib::Response& response) {
      int index = Remember(path, request);
      handler(request, response, index);
    });
  }

  // Every GET to `path` likewise.
  void OnGet(const std::string& path, Handler handler) {
    server_.Get(path, [this, path, handler](const httplib::Request& request, httplib::Response& response) {
      int index = Remember(path, request);
      handler(request, response, index);
    });
  }

  // Binds an ephemeral port and serves on a thread; the base URL, e.g. "http://127.0.0.1:40123".
  std::string Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so Stop() right after Start() must not race it.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return "http://127.0.0.1:" + std::to_string(port_);
  }

  void Stop() {
    stopping_ = true;
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Sleeps up to `seconds`, returning early when the server stops.
  void SleepUnlessStopping(double seconds) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!stopping_ && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::vector<ReceivedRequest> received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

 private:
  int Remember(const std::string& path, const httplib::Request& request) {
    std::lock_guard<std::mutex> lock(mutex_);
    received_.push_back({path, request.body, {request.headers.begin(), request.headers.end()}});
    int index = 0;
    for (const auto& seen : received_) index += seen.path == path ? 1 : 0;
    return index - 1;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<ReceivedRequest> received_;
};

}  // namespace kforge
