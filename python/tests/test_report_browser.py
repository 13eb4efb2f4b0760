"""`kforge report` and `kforge serve` in a real headless Chromium (Debian's package, driven by
Playwright): report files of a CPU bench, of a recorded H200 bench and of a comparison load with no
console errors and render their charts; the dashboard follows a bench another process runs and an
LLM run, updating its page without reloading it."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from PIL import Image
from playwright.sync_api import sync_playwright

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("KFORGE_BINARY", os.path.join(REPO, "build", "kforge"))
CHROMIUM = os.environ.get("KFORGE_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
RESULTS = os.path.join(REPO, "bench", "results")
CASSETTE = os.path.join(REPO, "tests", "agents", "data", "relu_writer.jsonl")


def kforge(tmp_path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", *args],
                          capture_output=True, text=True, timeout=timeout)


def make_suite(tmp_path):
    """Two tasks that compile to accepted kernels and one (a sort) that strict mode rejects."""
    suite = tmp_path / "suite"
    for level, task in (("level1", "21_hardtanh.py"), ("level2", "01_linear_relu.py")):
        os.makedirs(suite / level, exist_ok=True)
        shutil.copy(os.path.join(REPO, "tasks", level, task), suite / level / task)
    shutil.copy(os.path.join(REPO, "python", "tests", "tasks", "sort_rows.py"), suite / "level1" / "31_sort_rows.py")
    return suite


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox refuses to start as root (CI); the pages are ours.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Page:
    """A browser tab that records every console error and uncaught exception."""

    def __init__(self, browser):
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda message: self.errors.append(f"console {message.type}: {message.text}")
                     if message.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()

    def assert_not_blank(self):
        shot = Image.open(io.BytesIO(self.page.screenshot(full_page=True))).convert("RGB")
        small = shot.resize((shot.width // 4, shot.height // 4))
        colors = small.getcolors(maxcolors=1 << 20) or []
        background = max(colors)[0] if colors else 0
        assert len(colors) > 20, f"{len(colors)} colours: the page rendered (nearly) nothing"
        assert background < 0.97 * small.width * small.height, "one colour covers the page"


def test_cpu_bench_report_and_its_task_pages_render(tmp_path, browser):
    suite = make_suite(tmp_path)
    done = kforge(tmp_path, "bench", str(suite), "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr[-3000:]  # the sort has no kernel
    progress = json.load(open(tmp_path / "out" / "progress.json"))
    assert progress["state"] == "finished" and progress["done"] == 3 and progress["total"] == 3
    made = kforge(tmp_path, "report", str(tmp_path / "out"))
    assert made.returncode == 0, made.stderr
    report = tmp_path / "out" / "report.html"
    assert f"wrote {report}" in made.stdout
    html = report.read_text()
    assert "<link" not in html and "src=\"http" not in html  # self-contained: nothing fetched
    tab = Page(browser)
    tab.page.goto(report.as_uri())
    assert tab.count("table.tasks tbody tr") == 3
    assert tab.count("table.failures tbody tr") == 1
    assert "level1/31_sort_rows" in tab.page.locator("table.failures").inner_text()
    assert tab.count("svg.chart.compile-time rect.bar") == 3
    assert "timings mean nothing" in tab.page.locator("#overview").inner_text()
    tab.assert_not_blank()
    # Each task has its own page, linked from the bench page.
    tab.page.click("table.tasks a:has-text('level1/21_hardtanh')")
    tab.page.wait_for_load_state()
    assert tab.page.title() == "kforge task: level1/21_hardtanh"
    assert tab.count("svg.chart.samples circle.sample") >= 3
    assert "class ModelNew" in tab.page.locator("#source").inner_text()
    tab.assert_not_blank()
    assert tab.errors == []


def recorded_h200_bench() -> str:
    """The newest bench summary of a real H200 run kept in bench/results that records the roofline."""
    for name in sorted(os.listdir(RESULTS), reverse=True):
        if name.endswith("-bench.json"):
            summary = json.load(open(os.path.join(RESULTS, name)))
            if any(task.get("flops") for task in summary["tasks"]):
                return os.path.join(RESULTS, name)
    raise AssertionError("no H200 bench summary with FLOPs in bench/results")


def test_h200_bench_report_draws_distributions_and_the_roofline(tmp_path, browser):
    source = recorded_h200_bench()
    summary = json.load(open(source))
    timed = [t for t in summary["tasks"] if t["verdict"] == "accepted" and t.get("speedup_vs_eager")]
    with_flops = [t for t in timed if t.get("flops")]
    out = tmp_path / "h200.html"
    made = kforge(tmp_path, "report", source, "-o", str(out))
    assert made.returncode == 0, made.stderr
    tab = Page(browser)
    tab.page.goto(out.as_uri())
    bars = tab.page.locator("svg.chart.speedup-eager rect.bar")
    assert sum(int(bars.nth(i).get_attribute("data-count")) for i in range(bars.count())) == len(timed)
    assert tab.count("svg.chart.roofline circle.point") == len(with_flops)
    assert tab.count("svg.chart.roofline polyline.line.memory") == 1
    assert tab.count("svg.chart.bandwidth circle.point") == len(timed)
    tab.assert_not_blank()
    assert tab.errors == []


def test_two_recorded_runs_compared(tmp_path, browser):
    before = os.path.join(RESULTS, "2026-12-02-h200-twelfth-level1-bench.json")
    after = os.path.join(RESULTS, "2026-12-02-h200-thirteenth-level1-bench.json")
    out = tmp_path / "compare.html"
    made = kforge(tmp_path, "report", before, after, "-o", str(out))
    assert made.returncode == 0, made.stderr
    tab = Page(browser)
    tab.page.goto(out.as_uri())
    old = {t["task"]: t for t in json.load(open(before))["tasks"]}
    new = {t["task"]: t for t in json.load(open(after))["tasks"]}
    both = [task for task in new if task in old and old[task]["verdict"] == new[task]["verdict"] == "accepted"
            and old[task].get("speedup_vs_eager") and new[task].get("speedup_vs_eager")]
    assert tab.count("table.changes tbody tr") == len(both)
    assert tab.count("svg.chart.compare circle.point") == len(both)
    tab.assert_not_blank()
    assert tab.errors == []


class Server:
    """`kforge serve` on a free port, stopped with SIGTERM."""

    def __init__(self, tmp_path, *args: str):
        self.process = subprocess.Popen([BINARY, "--workspace", str(tmp_path / "ws"), "serve", "--port", "0", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.match(r"serving (http://127\.0\.0\.1:\d+/)", line)
        assert match, line + self.process.stderr.read()
        self.url = match.group(1)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0


def test_dashboard_follows_a_running_bench_without_reloading(tmp_path, browser):
    suite = make_suite(tmp_path)
    out = tmp_path / "out"
    server = Server(tmp_path, "--bench", str(out))
    try:
        tab = Page(browser)
        tab.page.goto(server.url)
        assert "not started" in tab.page.locator("table.benches").inner_text()
        tab.page.click("table.benches a")
        tab.page.wait_for_function("document.getElementById('live').textContent.startsWith('live')")
        tab.page.evaluate("window.kforgeMarker = 42")
        running = subprocess.Popen([BINARY, "--workspace", str(tmp_path / "ws"), "--device", "cpu", "bench", str(suite),
                                    "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Progress arrives while the bench runs: some task in progress, then all three done.
        tab.page.wait_for_selector("p.progress-line:has-text('now ')", timeout=300_000)
        tab.page.wait_for_selector("p.progress-line[data-done='3']", timeout=600_000)
        assert running.wait(timeout=600) == 1
        tab.page.wait_for_selector("table.tasks tbody tr >> nth=2", timeout=30_000)
        assert tab.page.evaluate("window.kforgeMarker") == 42, "the page was reloaded"
        assert int(tab.page.evaluate("document.body.getAttribute('data-updates')")) >= 2
        assert tab.count("table.latest tbody tr") == 3
        tab.assert_not_blank()
        # A task's page from the dashboard.
        tab.page.click("table.tasks a:has-text('level2/01_linear_relu')")
        tab.page.wait_for_load_state()
        assert "class ModelNew" in tab.page.locator("#source").inner_text()
        assert tab.errors == []
    finally:
        server.stop()


def test_dashboard_and_report_show_an_llm_run(tmp_path, browser):
    done = kforge(tmp_path, "optimize", "--json", "--out", str(tmp_path / "out"), "--llm", f"replay:{CASSETTE}",
                  "--workers", "1", "--rounds", "4", os.path.join(REPO, "tasks", "level1", "01_relu.py"))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    assert report["source_reason"].startswith("both were accepted and timings here mean nothing")
    run_id = report["llm"]["run_id"]
    server = Server(tmp_path)
    try:
        tab = Page(browser)
        tab.page.goto(server.url)
        tab.page.click(f"table.runs a:has-text('{run_id}')")
        tab.page.wait_for_selector("table.attempts")
        assert tab.count("table.attempts tbody tr") == 3
        assert "r1 compile_error → r2 rejected_hack(memoization) → r3 accepted" in tab.page.locator("ul.paths").inner_text()
        assert tab.count("svg.chart.spend circle.point") == 3  # one per model call, from the store
        tab.assert_not_blank()
        assert tab.errors == []
    finally:
        server.stop()
    made = kforge(tmp_path, "report", "--run", run_id, "-o", str(tmp_path / "run.html"))
    assert made.returncode == 0, made.stderr
    assert "r1 compile_error → r2 rejected_hack(memoization) → r3 accepted" in (tmp_path / "run.html").read_text()


def test_report_refuses_what_it_cannot_read(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = kforge(tmp_path, "report", str(empty))
    assert done.returncode == 2 and "holds no bench.json and no task report.json yet" in done.stderr
    (tmp_path / "x.json").write_text("{\"not\": 1}")
    done = kforge(tmp_path, "report", str(tmp_path / "x.json"))
    assert done.returncode == 2 and "is not a bench summary" in done.stderr
    done = kforge(tmp_path, "report", "--run", "no-such-run")
    assert done.returncode == 2 and "no run with id no-such-run" in done.stderr
