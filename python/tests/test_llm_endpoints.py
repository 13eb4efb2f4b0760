"""`kforge optimize --llm` against a scripted local OpenAI-/Anthropic-compatible server, through the
real binary on the CPU: fatal provider errors end the run in seconds with exit status 2 and words
that say what to do, and nothing falls back into more paid calls after one."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time

from fake_llm_server import FakeLlmServer, Reply, chat_reply, models

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
RELU = os.path.join(REPO, "tasks", "level1", "01_relu.py")
HONEST = open(os.path.join(REPO, "tests", "corpus", "candidates", "l1_01_relu", "honest_relu.py")).read()
SECRET = "sk-test-secret-5f0c7e"
PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                      "KFORGE_LLM_API_KEY", "KFORGE_LLM_BASE_URL")


def optimize(tmp_path, spec: str, *extra: str, env: dict | None = None, timeout: float = 600):
    clean = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    clean.update(env or {})
    started = time.monotonic()
    done = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "optimize", "--json",
                           "--out", str(tmp_path / "out"), "--llm", spec, *extra, RELU],
                          capture_output=True, text=True, timeout=timeout, env=clean)
    return done, time.monotonic() - started


def compat(server: FakeLlmServer) -> dict:
    return {"KFORGE_LLM_BASE_URL": server.url + "/v1", "KFORGE_LLM_API_KEY": SECRET}


def report_of(done) -> dict:
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(lines[-1])


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_key_ends_the_run_before_the_compiler_runs(tmp_path):
    refuse = lambda request, index: Reply(401, {"error": {"message": "Incorrect API key provided: " +
                                                          request.headers.get("authorization", "")}})
    with FakeLlmServer({("GET", "/v1/models"): refuse}) as server:
        done, seconds = optimize(tmp_path, "compat:coder", env=compat(server))
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 2, done.stderr[-2000:]
    assert seconds < 60
    assert "KFORGE_LLM_API_KEY" in done.stderr and "HTTP 401" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert chat_calls == []
    assert not (tmp_path / "out" / "01_relu" / "model_new.py").exists()  # the compiler never ran


def test_a_wrong_url_ends_the_run_at_once(tmp_path):
    env = {"KFORGE_LLM_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    done, seconds = optimize(tmp_path, "compat:coder", env=env)
    assert done.returncode == 2
    assert seconds < 60
    assert "cannot reach" in done.stderr and "KFORGE_LLM_BASE_URL" in done.stderr


def test_a_missing_key_ends_the_run_at_once(tmp_path):
    done, seconds = optimize(tmp_path, "openai:gpt-4o")
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr
    assert not (tmp_path / "out" / "01_relu" / "model_new.py").exists()


def test_an_exhausted_quota_stops_the_stage_with_no_fallback_and_keeps_the_compilers_work(tmp_path):
    quota = lambda request, index: Reply(429, {"error": {"message": "You exceeded your current quota",
                                                         "type": "insufficient_quota", "code": "insufficient_quota"}})
    with FakeLlmServer({("GET", "/v1/models"): models("coder"), ("POST", "/v1/chat/completions"): quota}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "2", "--rounds", "3", "--route", "auto",
                           env=compat(server))
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "the LLM stage stopped: quota_exceeded" in done.stderr and "add credit" in done.stderr
    assert 1 <= len(chat_calls) <= 2  # one per writer at most: no retry, no second round, no fallback route
    report = report_of(done)
    assert report["llm"]["fatal"].startswith("quota_exceeded")
    assert len(report["llm"]["routes"]) == 1
    assert report["evaluation"]["verdict"] == "accepted"  # the compiler's candidate is kept
    assert (tmp_path / "out" / "01_relu" / "model_new.py").exists()
    assert (tmp_path / "out" / "01_relu" / "report.json").exists()


def test_a_working_endpoint_is_checked_once_then_writes(tmp_path):
    reply = "```python\n" + HONEST + "```\n"
    with FakeLlmServer({("GET", "/v1/models"): models("coder"),
                        ("POST", "/v1/chat/completions"): lambda request, index: chat_reply(reply)}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "1", env=compat(server))
        listing = server.calls("GET", "/v1/models")
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(listing) == 1 and len(chat_calls) == 1
    assert chat_calls[0].headers["authorization"] == "Bearer " + SECRET
    assert [a["verdict"] for a in report_of(done)["llm"]["pool"]["attempts"]] == ["accepted"]


def test_a_role_with_a_model_of_its_own_gets_its_calls(tmp_path):
    wrong = "```python\n" + HONEST.replace("tl.where(x > 0.0, x, 0.0)", "tl.where(x > 0.0, x, 1.0)") + "```\n"
    assert wrong != "```python\n" + HONEST + "```\n"
    honest = "```python\n" + HONEST + "```\n"

    def answer(request, index):
        # The writer model's program is wrong; a repair (the same role) fixes it.
        return chat_reply(wrong if index == 0 else honest)

    with FakeLlmServer({("GET", "/v1/models"): models("coder", "writer"),
                        ("POST", "/v1/chat/completions"): answer}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--llm-for", "write=compat:writer", "--workers", "1",
                           "--rounds", "2", env=compat(server))
        listing = server.calls("GET", "/v1/models")
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "write calls go to compat:writer" in done.stderr and "repair calls go to compat:writer" in done.stderr
    assert len(listing) == 2  # each model is checked before any paid call
    assert [call.body["model"] for call in chat_calls] == ["writer", "writer"]
    report = report_of(done)
    assert report["llm"]["settings"]["role_llms"] == {"write": "compat:writer"}
    assert report["llm"]["usage"]["calls"] == 2
    stored = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--json"],
                            capture_output=True, text=True, timeout=60)
    assert stored.returncode == 0, stored.stderr
    assert {call["model"] for call in json.loads(stored.stdout)} == {"writer"}


def test_a_reasoning_model_request_carries_no_temperature_and_the_configured_limit(tmp_path):
    config = tmp_path / "llm.json"
    config.write_text(json.dumps({"models": {"o4*": {"max_output_tokens": 20000, "reasoning_effort": "high"}}}))
    reply = "```python\n" + HONEST + "```\n"
    with FakeLlmServer({("GET", "/v1/models"): models("o4-mini"),
                        ("POST", "/v1/chat/completions"): lambda request, index: chat_reply(reply)}) as server:
        done, _ = optimize(tmp_path, "openai:o4-mini", "--workers", "1", "--rounds", "1", "--llm-config", str(config),
                           env={"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": SECRET})
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 0, done.stderr[-3000:]
    body = chat_calls[0].body
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 20000 and body["reasoning_effort"] == "high"


def test_a_small_local_context_gets_an_output_limit_that_fits(tmp_path):
    config = tmp_path / "llm.json"
    config.write_text(json.dumps({"models": {"coder": {"context_tokens": 10000}}}))
    reply = "```python\n" + HONEST + "```\n"
    with FakeLlmServer({("GET", "/v1/models"): models("coder"),
                        ("POST", "/v1/chat/completions"): lambda request, index: chat_reply(reply)}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "1", "--llm-config", str(config),
                           env=compat(server))
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 0, done.stderr[-3000:]
    body = chat_calls[0].body
    prompt_chars = sum(len(m["content"]) for m in body["messages"])
    # The prompt (estimated high, at ~3 characters a token) and the reply fit the context together.
    assert body["max_tokens"] < 8192
    assert body["max_tokens"] + prompt_chars // 4 <= 10000


def test_an_unpriced_model_with_a_dollar_budget_stops_by_tokens_and_says_so(tmp_path):
    broken = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
             "        return torch.nn.functional.not_a_function(x)\n```\n"
    with FakeLlmServer({("GET", "/v1/models"): models("coder"),
                        ("POST", "/v1/chat/completions"): lambda request, index: chat_reply(broken)}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "4", "--budget-usd", "0.001",
                           env=compat(server))
        chat_calls = server.calls("POST", "/v1/chat/completions")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "coder has no known price" in done.stderr and "enforced as a budget of 13 tokens" in done.stderr
    assert len(chat_calls) == 1  # 1,200 tokens spent the 13-token budget
    report = report_of(done)
    assert "13 tokens" in report["llm"]["stop_reason"]
    assert report["llm"]["usage"]["unpriced_calls"] == 1


def test_a_listed_model_is_priced_without_configuration(tmp_path):
    reply = "```python\n" + HONEST + "```\n"
    with FakeLlmServer({("GET", "/v1/models"): models("gpt-4o"),
                        ("POST", "/v1/chat/completions"): lambda request, index: chat_reply(reply, 1000, 200)}) as server:
        done, _ = optimize(tmp_path, "openai:gpt-4o", "--workers", "1", "--rounds", "1",
                           env={"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": SECRET})
    assert done.returncode == 0, done.stderr[-3000:]
    usage = report_of(done)["llm"]["usage"]
    assert abs(usage["cost_usd"] - (1000 * 2.5 + 200 * 10.0) / 1e6) < 1e-9
    assert usage["unpriced_calls"] == 0


def test_a_recorded_run_replays_though_the_prompts_quote_other_numbers(tmp_path):
    """Round 1 writes a ReLU with a wrong threshold; the evaluator's feedback quotes the worst
    elements it found on fresh inputs, so the round-2 prompt differs from run to run."""
    wrong = HONEST.replace("tl.where(x > 0.0, x, 0.0)", "tl.where(x > 0.5, x, 0.0)")
    assert wrong != HONEST
    replies = tmp_path / "replies"
    replies.mkdir()
    (replies / "1.md").write_text("```python\n" + wrong + "```\n")
    (replies / "2.md").write_text("```python\n" + HONEST + "```\n")
    script = tmp_path / "model.sh"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\nn=$(cat {tmp_path}/count 2>/dev/null || echo 0)\n"
                      f"n=$((n + 1))\necho $n > {tmp_path}/count\ncat {replies}/$n.md\n")
    script.chmod(0o755)
    cassette = tmp_path / "run.jsonl"

    first = tmp_path / "first"
    first.mkdir()
    done, _ = optimize(first, f"command:{script}", "--workers", "1", "--rounds", "3", "--record", str(cassette))
    assert done.returncode == 0, done.stderr[-3000:]
    assert [a["verdict"] for a in report_of(done)["llm"]["pool"]["attempts"]] == ["wrong_output", "accepted"]

    second = tmp_path / "second"
    second.mkdir()
    done, _ = optimize(second, f"replay:{cassette}", "--workers", "1", "--rounds", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    attempts = report_of(done)["llm"]["pool"]["attempts"]
    assert [a["verdict"] for a in attempts] == ["wrong_output", "accepted"]
    prompts = [(run / "out" / "01_relu" / "llm" / "writer1" / "round2" / "prompt.md").read_text()
               for run in (first, second)]
    assert prompts[0] != prompts[1]  # the quoted numbers changed, and the replay still found its reply


def test_every_http_attempt_is_stored_with_its_outcome(tmp_path):
    reply = "```python\n" + HONEST + "```\n"

    def busy_then_answer(request, index):
        if index == 0:
            return Reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "1"})
        return chat_reply(reply)

    with FakeLlmServer({("GET", "/v1/models"): models("coder"),
                        ("POST", "/v1/chat/completions"): busy_then_answer}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "1", env=compat(server))
    assert done.returncode == 0, done.stderr[-3000:]
    run_id = report_of(done)["llm"]["run_id"]
    listed = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--json", "--run", run_id],
                            capture_output=True, text=True, timeout=60)
    [call] = json.loads(listed.stdout)
    shown = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--json", str(call["id"])],
                           capture_output=True, text=True, timeout=60)
    attempts = json.loads(shown.stdout)["attempts"]
    assert [(a["http_status"], a["outcome"]) for a in attempts] == [(429, "rate_limited"), (200, "ok")]
    assert attempts[0]["waited_s"] == 1.0 and not attempts[0]["maybe_billed"]


def test_a_runs_live_status_tells_the_retry_wait_and_is_stored_when_it_ends(tmp_path):
    reply = "```python\n" + HONEST + "```\n"

    def busy_then_answer(request, index):
        if index == 0:
            return Reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "2"})
        return chat_reply(reply)

    with FakeLlmServer({("GET", "/v1/models"): models("coder"),
                        ("POST", "/v1/chat/completions"): busy_then_answer}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "1", env=compat(server))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "retrying in 2 s as its Retry-After asks" in done.stderr, done.stderr[-3000:]
    run_id = report_of(done)["llm"]["run_id"]
    shown = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--run", run_id, "--status",
                            "--json"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    assert status["state"] == "finished" and status["attempts"] == 1 and status["accepted"] == 1
    assert status["calls"]["waits_so_far"] == 1 and status["calls"]["waited_s"] >= 2
    assert status["calls"]["in_flight"] == 0 and status["calls"]["retry_waits"] == 0
    words = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--run", run_id],
                           capture_output=True, text=True, timeout=60)
    assert "status (finished" in words.stdout, words.stdout
    missing = subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "show", "--llm", "--status"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "--status needs --run" in missing.stderr


def test_a_timed_out_generation_is_accounted_as_an_estimate(tmp_path):
    config = tmp_path / "llm.json"
    config.write_text(json.dumps({"timeout_s": 1, "max_attempts": 1, "prices": {"coder": {
        "input_usd_per_million": 1.0, "output_usd_per_million": 4.0}}}))
    slow = lambda request, index: Reply(200, {}, delay_s=5)
    with FakeLlmServer({("GET", "/v1/models"): models("coder"), ("POST", "/v1/chat/completions"): slow}) as server:
        done, _ = optimize(tmp_path, "compat:coder", "--workers", "1", "--rounds", "1", "--llm-config", str(config),
                           env=compat(server))
    assert done.returncode == 0, done.stderr[-3000:]
    usage = report_of(done)["llm"]["usage"]
    assert usage["prompt_tokens"] + usage["completion_tokens"] == 0  # the provider reported nothing
    assert usage["estimated_tokens"] > 8192  # the prompt and the whole output limit, at most
    assert usage["estimated_cost_usd"] > 8192 * 4.0 / 1e6
