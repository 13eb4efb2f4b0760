#include "report/llm_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "core/files.h"
#include "report/html_page.h"
#include "report/svg_chart.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Seconds since the epoch of an ISO-8601 UTC time as the store writes it; nullopt if malformed.
std::optional<double> EpochSeconds(const std::string& iso) {
  std::tm tm{};
  int year, month, day, hour, minute;
  double second;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lf", &year, &month, &day, &hour, &minute, &second) != 6) return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  return static_cast<double>(timegm(&tm)) + second;
}

// The stage's attempts from each round's verdict.json under `folder`, in the order they finished.
std::vector<LlmAttempt> AttemptsUnder(const fs::path& folder) {
  struct Found {
    fs::file_time_type time;
    LlmAttempt attempt;
  };
  std::vector<Found> found;
  for (const RoundFolder& round : RoundFoldersUnder(folder)) {
    auto text = ReadFile(round.path / "verdict.json");
    if (!text.ok()) continue;
    auto json = ParseJson(*text, (round.path / "verdict.json").string());
    if (!json.ok()) continue;
    found.push_back({round.finished, LlmAttempt::FromJson(JsonField(*json, "attempt"), round.scope)});
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.time < b.time; });
  std::vector<LlmAttempt> attempts;
  for (Found& f : found) {
    f.attempt.finished_s = std::chrono::duration<double>(f.time - found.front().time).count();
    attempts.push_back(std::move(f.attempt));
  }
  return attempts;
}

std::string Headline(const LlmRunView& run) {
  int accepted = 0;
  std::optional<double> best;
  for (const LlmAttempt& attempt : run.attempts) {
    if (attempt.verdict != "accepted") continue;
    ++accepted;
    if (attempt.speedup && (!best || *attempt.speedup > *best)) best = attempt.speedup;
  }
  std::string html = run.summary.empty() ? "" : "<p>" + HtmlEscape(run.summary) + "</p>";
  html += "<div class=\"stats\">";
  if (!run.state.empty()) html += Stat(run.state, "state");
  html += Stat(std::to_string(run.attempts.size()), "attempts");
  html += Stat(std::to_string(accepted), "accepted");
  html += Stat(best ? fmt::format("{:.2f}x", *best) : "-", "best speedup over eager");
  html += Stat(fmt::format("{}{}", run.tokens, run.budget_tokens > 0 ? fmt::format(" of {}", run.budget_tokens) : ""),
               "tokens (of budget)");
  html += Stat(fmt::format("${:.4f}{}", run.cost_usd, run.budget_usd > 0 ? fmt::format(" of ${:.2f}", run.budget_usd) : ""),
               "cost (of budget)");
  return html + "</div>";
}

std::string LiveStatus(const Json& status) {
  if (!status.is_object()) return "";
  std::string words = fmt::format("{} attempt(s), {} accepted; {} tokens, ${:.4f}; {:.0f} s elapsed",
                                  JsonGet<int>(status, "attempts", 0), JsonGet<int>(status, "accepted", 0),
                                  JsonGet<int64_t>(status, "tokens", 0), JsonGet<double>(status, "cost_usd", 0),
                                  JsonGet<double>(status, "elapsed_s", 0));
  if (auto eta = JsonNumber(status, "eta_s")) words += fmt::format(", about {:.0f} s left", *eta);
  const Json& calls = JsonField(status, "calls");
  if (calls.is_object()) {
    words += fmt::format("; {} call(s) in flight, {} queued", JsonGet<int>(calls, "in_flight", 0), JsonGet<int>(calls, "queued", 0));
    if (JsonGet<int>(calls, "retry_waits", 0) > 0) {
      words += fmt::format("; {} retry wait(s), {:.0f} s left ({})", JsonGet<int>(calls, "retry_waits", 0),
                           JsonGet<double>(calls, "wait_left_s", 0), JsonGet<std::string>(calls, "wait_reason", "?"));
    }
  }
  return fmt::format("<p class=\"live-status\">Now: {} (updated {})</p>", HtmlEscape(words),
                     HtmlEscape(JsonGet<std::string>(status, "updated_at", "?")));
}

std::string AttemptsChart(const LlmRunView& run) {
  std::vector<ChartPoint> points;
  ChartLine best{"best so far", {}, "best", true};
  double best_speedup = 0;
  const bool timed_axis = std::all_of(run.attempts.begin(), run.attempts.end(),
                                      [](const LlmAttempt& a) { return a.finished_s.has_value(); }) &&
                          !run.attempts.empty();
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    const LlmAttempt& attempt = run.attempts[i];
    const double x = timed_axis ? *attempt.finished_s : static_cast<double>(i + 1);
    if (attempt.speedup && attempt.verdict == "accepted") {
      points.push_back({x, *attempt.speedup,
                        fmt::format("attempt {} ({}, writer {}, round {}): {:.2f}x", i + 1, attempt.scope, attempt.writer,
                                    attempt.round, *attempt.speedup),
                        *attempt.speedup >= 1 ? "good" : "bad"});
      best_speedup = std::max(best_speedup, *attempt.speedup);
    }
    if (best_speedup > 0) best.points.push_back({x, best_speedup});
  }
  if (points.empty()) return "<p class=\"muted\">No accepted attempt was timed yet (on the CPU timings mean nothing).</p>";
  return "<figure>" +
         ScatterChart("attempts",
                      {timed_axis ? "seconds since the first attempt" : "attempt, in the order they finished", false, 0.0, std::nullopt},
                      {"speedup over eager", true, std::nullopt, std::nullopt}, points, {best}) +
         "<figcaption>Accepted attempts by speedup, and the best so far.</figcaption></figure>";
}

std::string SpendChart(const LlmRunView& run) {
  if (run.calls.empty()) return "";
  const bool dollars = run.budget_usd > 0 || run.cost_usd > 0;
  ChartLine spend{"spent", {}, "best", true};
  double total = 0;
  std::vector<ChartPoint> points;
  for (const LlmCallPoint& call : run.calls) {
    total += dollars ? call.cost_usd : static_cast<double>(call.tokens);
    spend.points.push_back({call.at_s, total});
    points.push_back({call.at_s, total,
                      fmt::format("{} ({}): {} tokens, ${:.4f}, {:.1f} s", call.model, call.status, call.tokens, call.cost_usd,
                                  call.latency_s),
                      call.status == "ok" ? "" : "bad"});
  }
  std::vector<ChartLine> lines = {spend};
  const double budget = dollars ? run.budget_usd : static_cast<double>(run.budget_tokens);
  double top = total;
  if (budget > 0) {
    lines.push_back({"budget", {{0, budget}, {run.calls.back().at_s, budget}}, "compute", false});
    top = std::max(top, budget);
  }
  return "<figure>" +
         ScatterChart("spend", {"seconds since the first call", false, 0.0, std::nullopt},
                      {dollars ? "dollars spent" : "tokens spent", false, 0.0, top * 1.05}, points, lines) +
         fmt::format("<figcaption>{} model call(s) as they were made; the orange line is the budget{}.</figcaption></figure>",
                     run.calls.size(), budget > 0 ? "" : " (none set)");
}

std::string WriterPaths(const LlmRunView& run) {
  std::map<std::string, std::vector<std::string>> paths;
  for (const LlmAttempt& attempt : run.attempts) {
    paths[fmt::format("{} / writer {}", attempt.scope, attempt.writer)].push_back(
        fmt::format("r{} {}{}", attempt.round, attempt.verdict,
                    attempt.speedup && attempt.verdict == "accepted" ? fmt::format(" {:.2f}x", *attempt.speedup) : ""));
  }
  std::string html = "<ul class=\"paths\">";
  for (const auto& [writer, steps] : paths) {
    std::string path;
    for (const std::string& step : steps) path += (path.empty() ? "" : " → ") + step;
    html += "<li><b>" + HtmlEscape(writer) + "</b>: " + HtmlEscape(path) + "</li>";
  }
  return html + "</ul>";
}

std::string AttemptTable(const LlmRunView& run) {
  HtmlTable table({"#", "part", "#writer", "#round", "prompt", "verdict", "#speedup", "#tokens", "#cost", "#seconds", "why"},
                  "attempts");
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    const LlmAttempt& a = run.attempts[i];
    table.AddRow({std::to_string(i + 1), HtmlEscape(a.scope), std::to_string(a.writer), std::to_string(a.round),
                  HtmlEscape(a.prompt), VerdictCell(a.verdict), SpeedupCell(a.verdict == "accepted" ? a.speedup : std::nullopt),
                  std::to_string(a.tokens), fmt::format("${:.4f}", a.cost_usd), fmt::format("{:.1f}", a.seconds),
                  HtmlEscape(a.message.substr(0, 200))});
  }
  return table.empty() ? "<p class=\"muted\">No attempt has finished yet.</p>" : table.Render();
}

}  // namespace

LlmAttempt LlmAttempt::FromJson(const Json& attempt, const std::string& scope) {
  LlmAttempt out;
  out.scope = scope;
  out.writer = JsonGet<int>(attempt, "writer", 0);
  out.round = JsonGet<int>(attempt, "round", 0);
  out.prompt = JsonGet<std::string>(attempt, "prompt", "");
  out.verdict = JsonGet<std::string>(attempt, "verdict", "?");
  out.message = JsonGet<std::string>(attempt, "message", "");
  out.speedup = JsonNumber(attempt, "speedup");
  out.tokens = JsonGet<int64_t>(attempt, "prompt_tokens", 0) + JsonGet<int64_t>(attempt, "completion_tokens", 0);
  out.cost_usd = JsonGet<double>(attempt, "cost_usd", 0);
  out.seconds = JsonGet<double>(attempt, "seconds", 0);
  return out;
}

std::vector<RoundFolder> RoundFoldersUnder(const fs::path& stage) {
  std::vector<RoundFolder> rounds;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(stage, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().filename() != "verdict.json") continue;
    const fs::path round = it->path().parent_path();
    // <stage>/[<part>/]writer<i>/round<r>: the part, if any, names the pool.
    const fs::path pool = fs::relative(round.parent_path().parent_path(), stage);
    std::error_code time_ec;
    rounds.push_back({round, pool.empty() || pool == "." ? "whole" : pool.string(), fs::last_write_time(it->path(), time_ec)});
  }
  std::sort(rounds.begin(), rounds.end(), [](const RoundFolder& a, const RoundFolder& b) { return a.path < b.path; });
  return rounds;
}

LlmRunView LlmRunFromReport(const Json& llm) {
  LlmRunView run;
  run.run_id = JsonGet<std::string>(llm, "run_id", "");
  run.summary = JsonGet<std::string>(llm, "summary", "");
  run.stop_reason = JsonGet<std::string>(llm, "stop_reason", "");
  for (const Json& attempt : JsonField(JsonField(llm, "pool"), "attempts")) run.attempts.push_back(LlmAttempt::FromJson(attempt, "whole"));
  for (const Json& part : JsonField(llm, "parts")) {
    std::string scope;
    for (const Json& name : JsonField(part, "groups")) scope += (scope.empty() ? "" : "+") + name.get<std::string>();
    for (const Json& attempt : JsonField(part, "attempts")) run.attempts.push_back(LlmAttempt::FromJson(attempt, scope));
  }
  const Json& usage = JsonField(llm, "usage");
  run.tokens = JsonGet<int64_t>(usage, "prompt_tokens", 0) + JsonGet<int64_t>(usage, "completion_tokens", 0);
  run.cost_usd = JsonGet<double>(usage, "cost_usd", 0);
  const Json& settings = JsonField(llm, "settings");
  run.budget_tokens = JsonGet<int64_t>(settings, "budget_tokens", 0);
  run.budget_usd = JsonGet<double>(settings, "budget_usd", 0);
  return run;
}

Result<LlmRunView> LoadLlmRun(Store& store, const std::string& run_id) {
  ASSIGN_OR_RETURN(RunRecord record, store.GetRun(run_id));
  LlmRunView run;
  run.run_id = run_id;
  run.state = record.status;
  const fs::path folder = JsonGet<std::string>(record.config, "folder", "");
  run.budget_tokens = JsonGet<int64_t>(record.config, "budget_tokens", 0);
  run.budget_usd = JsonGet<double>(record.config, "budget_usd", 0);
  if (!folder.empty()) run.attempts = AttemptsUnder(folder);
  ASSIGN_OR_RETURN(std::vector<LlmCallRecord> calls, store.ListLlmCalls(run_id, 100000));
  std::reverse(calls.begin(), calls.end());  // oldest first
  std::optional<double> first;
  for (const LlmCallRecord& call : calls) {
    const std::optional<double> at = EpochSeconds(call.created_at);
    if (at && !first) first = at;
    const int64_t tokens = call.prompt_tokens + call.completion_tokens;
    run.calls.push_back({at && first ? *at - *first : 0, tokens, call.cost_usd, call.model, call.status, call.latency_s});
    run.tokens += tokens;
    run.cost_usd += call.cost_usd;
  }
  ASSIGN_OR_RETURN(std::optional<Json> status, store.GetRunStatus(run_id));
  if (status) {
    run.status = *status;
    run.state = JsonGet<std::string>(*status, "state", run.state);
  }
  // A finished stage's summary line, from its folder.
  if (!folder.empty()) {
    if (auto text = ReadFile(folder / "summary.json"); text.ok()) {
      if (auto summary = ParseJson(*text, "summary.json"); summary.ok()) {
        run.summary = JsonGet<std::string>(*summary, "summary", "");
        run.stop_reason = JsonGet<std::string>(*summary, "stop_reason", "");
      }
    }
  }
  return run;
}

std::string LlmRunBody(const LlmRunView& run) {
  std::string html = Headline(run) + LiveStatus(run.status);
  html += "<div class=\"charts\">" + AttemptsChart(run) + SpendChart(run) + "</div>";
  html += "<h3>Each writer's path</h3>" + WriterPaths(run);
  html += "<h3>Attempts</h3>" + AttemptTable(run);
  if (!run.stop_reason.empty()) html += "<p class=\"muted\">Stopped: " + HtmlEscape(run.stop_reason) + "</p>";
  return html;
}

std::string LlmRunReportHtml(const LlmRunView& run) {
  return RenderPage({"kforge LLM run: " + run.run_id, HtmlEscape(run.state), Section("llm", "LLM stage", LlmRunBody(run)), ""});
}

}  // namespace kforge
