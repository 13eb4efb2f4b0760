#include "serve/dashboard.h"

#include <chrono>

#include <fmt/format.h>
#include <httplib.h>

#include "core/files.h"
#include "core/json.h"
#include "report/bench_progress.h"
#include "report/bench_row.h"
#include "report/html_page.h"
#include "report/html_report.h"
#include "report/llm_run.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Fetches the page's body again whenever its event stream says the data changed.
constexpr const char kLiveScript[] = R"js(
(function () {
  var live = document.getElementById('live');
  var updates = 0;
  var source = new EventSource('/events?page=' + encodeURIComponent(PAGE));
  source.addEventListener('update', function () {
    fetch('/body?page=' + encodeURIComponent(PAGE), { cache: 'no-store' })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        document.getElementById('content').innerHTML = html;
        updates += 1;
        document.body.setAttribute('data-updates', String(updates));
        live.textContent = 'live: updated ' + new Date().toLocaleTimeString();
      })
      .catch(function (error) { live.textContent = 'live: update failed (' + error + ')'; });
  });
  source.onopen = function () { live.textContent = 'live'; };
  source.onerror = function () { live.textContent = 'live: reconnecting'; };
})();
)js";

// A JavaScript string literal of `text` that cannot close the script element it sits in.
std::string ScriptString(const std::string& text) {
  std::string literal = Json(text).dump(-1, ' ', true);
  std::string safe;
  for (char c : literal) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return safe;
}

std::string ProgressPanel(const BenchProgress& progress) {
  const double share = progress.total > 0 ? static_cast<double>(progress.done) / progress.total : 0;
  std::string html = fmt::format("<div class=\"progress\"><div class=\"done\" style=\"width:{:.1f}%\"></div></div>", share * 100);
  html += "<p class=\"progress-line\" data-done=\"" + std::to_string(progress.done) + "\" data-total=\"" +
          std::to_string(progress.total) + "\">" + HtmlEscape(progress.Line()) + "</p>";
  if (!progress.latest.empty()) {
    HtmlTable latest({"latest", "verdict", "#vs eager"}, "latest");
    for (const BenchProgress::Latest& entry : progress.latest) {
      latest.AddRow({HtmlEscape(entry.task), VerdictCell(entry.verdict), SpeedupCell(entry.speedup_vs_eager)});
    }
    html += latest.Render();
  }
  return html;
}

std::string Fingerprint(const fs::path& file) {
  std::error_code ec;
  const auto time = fs::last_write_time(file, ec);
  if (ec) return "-";
  return std::to_string(time.time_since_epoch().count()) + ":" + std::to_string(fs::file_size(file, ec));
}

std::string BenchFingerprint(const fs::path& folder) {
  auto progress = ReadFile(folder / "progress.json");
  return (progress.ok() ? *progress : "-") + Fingerprint(folder / "bench.json");
}

// The number after "bench/" in a page name, when it names one of `count` folders.
std::optional<size_t> BenchIndex(const std::string& page, size_t count) {
  if (page.rfind("bench/", 0) != 0) return std::nullopt;
  try {
    size_t used = 0;
    const size_t index = std::stoul(page.substr(6), &used);
    if (used != page.size() - 6 || index >= count) return std::nullopt;
    return index;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

Dashboard::Dashboard(Store* store, DashboardOptions options)
    : store_(store), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  const int threads = options_.threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  if (options_.tokens != nullptr) RequireTokens(*server_, *options_.tokens);
  Route();
  if (options_.extend) options_.extend(*server_);
}

Dashboard::~Dashboard() { Stop(); }

Status Dashboard::Start(const std::string& host, int port) {
  port_ = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) return Status::Unavailable(fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", host, port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void Dashboard::Stop() {
  stopping_ = true;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string Dashboard::IndexBody() const {
  HtmlTable benches({"bench folder", "progress", ""}, "benches");
  for (size_t i = 0; i < options_.bench_folders.size(); ++i) {
    const fs::path& folder = options_.bench_folders[i];
    auto progress = ReadBenchProgress(folder);
    std::string state = progress.ok() ? HtmlEscape(progress->Line())
                        : fs::exists(folder / "bench.json") ? "finished (no progress file)"
                                                            : "<span class=\"muted\">not started</span>";
    benches.AddRow({HtmlEscape(folder.string()), state, fmt::format("<a href=\"/bench/{}\">open</a>", i)});
  }
  std::string html = Section("benches", "Bench runs",
                             benches.empty() ? "<p class=\"muted\">None followed: start with --bench FOLDER.</p>" : benches.Render());
  HtmlTable runs({"LLM run", "command", "state", "started", "finished"}, "runs");
  if (store_ != nullptr) {
    if (auto listed = store_->ListRuns(50); listed.ok()) {
      for (const RunRecord& run : *listed) {
        std::string state = run.status;
        if (auto status = store_->GetRunStatus(run.id); status.ok() && *status) state = JsonGet<std::string>(**status, "state", state);
        runs.AddRow({fmt::format("<a href=\"/run/{}\">{}</a>", HtmlEscape(httplib::detail::encode_query_param(run.id)), HtmlEscape(run.id)),
                     HtmlEscape(run.command), HtmlEscape(state), HtmlEscape(run.started_at),
                     HtmlEscape(run.finished_at.value_or(""))});
      }
    }
  }
  html += Section("runs", "LLM runs", runs.empty() ? "<p class=\"muted\">None in the store.</p>" : runs.Render());
  return html;
}

std::string Dashboard::Fingerprint(const std::string& page) const {
  if (auto index = BenchIndex(page, options_.bench_folders.size())) return BenchFingerprint(options_.bench_folders[*index]);
  std::string print;
  if (page.rfind("run/", 0) == 0 && store_ != nullptr) {
    const std::string run_id = page.substr(4);
    if (auto status = store_->GetRunStatus(run_id); status.ok() && *status) print += (**status).dump();
    if (auto calls = store_->ListLlmCalls(run_id, 1); calls.ok() && !calls->empty()) print += std::to_string(calls->front().id);
    if (auto run = store_->GetRun(run_id); run.ok()) print += run->status;
    return print;
  }
  for (const fs::path& folder : options_.bench_folders) print += BenchFingerprint(folder);
  if (store_ != nullptr) {
    if (auto listed = store_->ListRuns(50); listed.ok()) {
      for (const RunRecord& run : *listed) {
        print += run.id + run.status;
        if (auto status = store_->GetRunStatus(run.id); status.ok() && *status) print += JsonGet<std::string>(**status, "updated_at", "");
      }
    }
  }
  return print;
}

void Dashboard::Route() {
  auto& server = *server_;
  // The body of a page, or NotFound.
  auto body = [this](const std::string& page) -> Result<std::string> {
    if (page == "index") return IndexBody();
    if (auto index = BenchIndex(page, options_.bench_folders.size())) {
      const fs::path& folder = options_.bench_folders[*index];
      std::string html;
      if (auto progress = ReadBenchProgress(folder); progress.ok()) html += Section("progress", "Progress", ProgressPanel(*progress));
      auto run = LoadBenchRun(folder);
      if (!run.ok()) return html + "<p class=\"muted\">No task has finished yet.</p>";
      ReportLinks links;
      const size_t i = *index;
      links.task_href = [i](const BenchRow& row) {
        return fmt::format("/bench/{}/task?name={}", i, httplib::detail::encode_query_param(row.task));
      };
      return html + BenchBody(*run, links);
    }
    if (page.rfind("run/", 0) == 0 && store_ != nullptr) {
      auto run = LoadLlmRun(*store_, page.substr(4));
      if (!run.ok()) return run.status();
      return Section("llm", "LLM stage", LlmRunBody(*run));
    }
    return Status::NotFound("no page " + page);
  };
  auto live_page = [body](const std::string& page, const std::string& title, httplib::Response& response) {
    auto html = body(page);
    if (!html.ok()) {
      response.status = 404;
      response.set_content(HtmlEscape(html.status().message()), "text/plain; charset=utf-8");
      return;
    }
    response.set_content(RenderPage({title, "<a href=\"/\" style=\"color:#c9d1dc\">kforge serve</a> · <span id=\"live\" class=\"live\">connecting</span>",
                                     *html, "var PAGE = " + ScriptString(page) + ";\n" + kLiveScript}),
                         "text/html; charset=utf-8");
  };
  server.Get("/", [live_page](const httplib::Request&, httplib::Response& response) {
    live_page("index", "kforge dashboard", response);
  });
  server.Get(R"(/bench/(\d+))", [live_page](const httplib::Request& request, httplib::Response& response) {
    live_page("bench/" + request.matches[1].str(), "kforge bench", response);
  });
  server.Get(R"(/run/(.+))", [live_page](const httplib::Request& request, httplib::Response& response) {
    live_page("run/" + request.matches[1].str(), "kforge LLM run " + request.matches[1].str(), response);
  });
  server.Get(R"(/bench/(\d+)/task)", [this](const httplib::Request& request, httplib::Response& response) {
    auto index = BenchIndex("bench/" + request.matches[1].str(), options_.bench_folders.size());
    const std::string name = request.get_param_value("name");
    for (const TaskReportFile& file : index ? TaskReportsUnder(options_.bench_folders[*index]) : std::vector<TaskReportFile>()) {
      if (JsonGet<std::string>(file.report, "task", "") != name) continue;
      auto source = ReadFile(file.path.parent_path() / "model_new.py");
      response.set_content(TaskReportHtml(file.report, source.ok() ? *source : ""), "text/html; charset=utf-8");
      return;
    }
    response.status = 404;
    response.set_content("no such task in this bench", "text/plain; charset=utf-8");
  });
  // Browsers ask for an icon whatever the page says.
  server.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\"><rect width=\"16\" height=\"16\" "
                         "rx=\"3\" fill=\"#1d2430\"/><path d=\"M4 12V4l8 8V4\" stroke=\"#1a7f37\" stroke-width=\"2\" fill=\"none\"/></svg>",
                         "image/svg+xml");
  });
  server.Get("/body", [body](const httplib::Request& request, httplib::Response& response) {
    auto html = body(request.get_param_value("page"));
    if (!html.ok()) {
      response.status = 404;
      response.set_content(html.status().message(), "text/plain; charset=utf-8");
      return;
    }
    response.set_header("Cache-Control", "no-store");
    response.set_content(*html, "text/html; charset=utf-8");
  });
  // Server-sent events: "update" whenever the page's data changed (once at the start, so a page
  // opened between two changes is current), comments in between to keep the stream open.
  server.Get("/events", [this](const httplib::Request& request, httplib::Response& response) {
    const std::string page = request.has_param("page") ? request.get_param_value("page") : "index";
    response.set_header("Cache-Control", "no-store");
    auto last = std::make_shared<std::string>("\x01never");
    auto idle = std::make_shared<double>(0);
    response.set_chunked_content_provider("text/event-stream", [this, page, last, idle](size_t, httplib::DataSink& sink) {
      while (!stopping_) {
        const std::string now = Fingerprint(page);
        if (now != *last) {
          *last = now;
          *idle = 0;
          const std::string event = "event: update\ndata: " + Json({{"page", page}}).dump() + "\n\n";
          if (!sink.write(event.data(), event.size())) return false;
          return true;  // the library calls again: the next round waits for the next change
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_s));
        *idle += options_.poll_s;
        if (*idle >= options_.heartbeat_s) {
          *idle = 0;
          static constexpr char kPing[] = ": ping\n\n";
          if (!sink.write(kPing, sizeof(kPing) - 1)) return false;
        }
        if (!sink.is_writable()) return false;
      }
      sink.done();
      return false;
    });
  });
}

}  // namespace kforge
