"""What does the live Train page cost the server while a long run is live?

Builds a store with a finished baseline and a *running* run of EXECUTIONS
stored executions (as a long run has after a while; the run's pid is this
process, so it reads as live). Before each refresh it appends what a live
worker writes in a second (ROWS_PER_REFRESH executions, one system sample, an
epoch row every EPOCH_EVERY refreshes), outside the measured time, so the page
really reads and draws new rows each tick. It then renders the Train page with
Streamlit's AppTest (in this process, as the server would) and prints:

- server CPU per *fragment* run: while a run is live the browser reruns only the
  live fragment (views/train/live.py `live_view`, run_every 1 s), not the page; this
  is the cost that repeats every second: median, mean and 90th percentile;
  goal (median) <= 0.2 s;
- server CPU per *full page* run (a reload, or any widget change), median;
- refreshes per second the server could sustain (1 / wall per fragment run);
- a widget change (batch size) shown: wall seconds of that full rerun, goal <= 1 s;
- memory growth (RSS, MB) over REFRESHES fragment runs once warm, goal <= 50 MB
  (it includes the rows the run really adds: about 90 bytes per execution kept).

The live view redraws its slower charts (learning rate, worker CPU and memory,
data wait) every SLOW_REFRESH_S (5 s) and keeps them in between; refreshes here
run back to back, faster than once a second, so the script expires that cache
every SLOW_REFRESH_S / LIVE_REFRESH_S refreshes, as the browser's 1 s timer
would: one refresh in five pays for them (hence mean and p90 next to the median).

AppTest runs a fragment alone by passing its id in the rerun request, as the
browser's timer does (streamlit.testing internals; if that fails, the script
says so and measures full page runs only). AppTest also recompiles the page
script on every run, which the server caches: full page runs here cost a little
more than on the server.

    python benchmarks/live_view.py [--executions 50000] [--refreshes 1000] [--rows-per-refresh 100]

Does the open page slow the run it measures? ``--open-closed PAIRS`` measures it
side by side instead: a real Streamlit server and headless Chromium on this
machine, and PAIRS interleaved pairs (closed/open, then open/closed, ...) of the
same measured launch (a one-pair A/A comparison of digits/`--model`, `--epochs`
epochs, through engine.jobs.comparison as the Train page launches it), page open
in Chromium for one side and closed for the other. One Chromium runs throughout; an
open side opens the page in a new tab SETTLE_S before its launch (its first draw is
not the run's cost) and closes the tab after. It prints steady and
end-to-end samples/s with the page open / closed, per pair and as the geometric
mean with its 95% t interval (engine.report.stats), and the CPU seconds the
server and the browser used per second of run. Targets: steady open/closed >= 0.98;
server + browser <= 0.05 CPU-s per s of run.

    python benchmarks/live_view.py --open-closed 4 [--epochs 60] [--model cnn] [--presenter]

``--presenter`` opens the page in presenter mode (?mode=talk), which draws the training run's
throughput and loss every views.components.presenter.MEASURE_REFRESH_S while a comparison measures.

What does the open page cost in each phase of a plain run? ``--page-cpu SECONDS``
opens the Train page in headless Chromium on a live run that grows 100 executions a
second, and measures server and browser CPU-s per second in its 'starting' phase
(1 s refresh) and its 'steady' phase (3 s, engine.report.live_refresh), interleaved:

    python benchmarks/live_view.py --page-cpu 20 [--rounds 2]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PER_EPOCH = 500  # executions per epoch of the live run
SETTLE_S = 5.0   # --open-closed: the page's first full draw, before the measured window


def _exec_row(i: int, count: int, per_epoch: int, t: float) -> tuple[tuple, float]:
    d = 0.01 * (1.0, 0.95, 1.05)[i % 3]
    t += d
    return (i, i // per_epoch, i + 1, 1, t, d, 128 / d, 2.3 * math.exp(-3 * i / count), 1e-3,
            int(i == 0), 0.0001), t


class LiveRun:
    """A store with a finished baseline and a running run that `grow` extends."""

    def __init__(self, n: int, refreshes: int, rows_per_refresh: int):
        import psutil

        from engine.config import RunConfig
        from engine.store import Store

        me = psutil.Process()
        self.store = Store()
        self.n = n
        epochs_needed = (n + refreshes * rows_per_refresh) // PER_EPOCH + 10
        for role, count, status in (("baseline", 2000, "completed"), ("run", n, "running")):
            per_epoch = 20 if role == "baseline" else PER_EPOCH
            epochs = 100 if role == "baseline" else epochs_needed
            cfg = (RunConfig(epochs=epochs) if role == "baseline"
                   else RunConfig(epochs=epochs, precision="mixed_bfloat16"))
            rid = self.store.create_run(cfg.to_json(), role=role, group_id="g", status="running")
            self.store.update_run(rid, plan={"steps_per_epoch": per_epoch, "total_steps": per_epoch * epochs,
                                             "epochs": epochs, "replicas": 1, "device_kind": "CPU",
                                             "train_started_at": time.time() - 60},
                                  environment={"hostname": os.uname().nodename}, pid=me.pid,
                                  pid_started=me.create_time())
            rows, t = [], 0.0
            for i in range(count):
                row, t = _exec_row(i, count, per_epoch, t)
                rows.append(row)
            epoch_rows = [self._epoch(e, t * (e + 1) / (count // per_epoch), per_epoch)
                          for e in range(count // per_epoch)]
            system = [self._system(float(s)) for s in range(int(t) + 1)]
            self.store.add_metrics(rid, rows, epoch_rows, system)
            if status == "completed":
                self.store.finish_run(rid, "completed", summary={"samples_per_sec": 12800.0, "wall_sec": t})
            else:
                self.run_id, self.i, self.t, self.sys_t = rid, count, t, float(int(t) + 1)

    @staticmethod
    def _epoch(e: int, t: float, per_epoch: int) -> tuple:
        return (e, t, (e + 1) * per_epoch, 1.0 / (e + 1), 0.5, 0.9 / (e + 1), 0.9, 1e-3, 0.9 / (e + 1))

    @staticmethod
    def _system(t: float) -> tuple:
        from engine.store import SYSTEM_COLS

        return tuple({"t": t, "cpu_percent": 95.0, "rss_mb": 800.0, "mem_percent": 20.0,
                      "gpu_mem_mb": None, "worker": 0}[c] for c in SYSTEM_COLS)

    def grow(self, rows: int, warm: bool = False) -> None:
        """Append what the worker writes in a second: `rows` executions, a system
        sample, and the epoch rows completed by them. `warm`: flag the newest
        execution as warm-up (a run still tracing: engine.report.live_refresh 'starting')."""
        new, epochs = [], []
        for k in range(rows):
            row, self.t = _exec_row(self.i, self.n, PER_EPOCH, self.t)
            if warm and k == rows - 1:
                row = row[:9] + (1,) + row[10:]
            new.append(row)
            self.i += 1
            if self.i % PER_EPOCH == 0:
                epochs.append(self._epoch(self.i // PER_EPOCH - 1, self.t, PER_EPOCH))
        self.store.add_metrics(self.run_id, new, epochs, [self._system(self.sys_t)])
        self.sys_t += 1.0


def live_fragment_id(at) -> str | None:
    """Id of the Train page's live fragment in `at` (AppTest internals)."""
    for fid, wrapped in getattr(at, "_fragment_storage")._fragments.items():
        for cell in wrapped.__closure__ or ():
            if getattr(cell.cell_contents, "__name__", "") == "live_view":
                return fid
    return None


def fragment_run(at, fid: str) -> None:
    """Rerun only fragment `fid`, as the browser's run_every timer asks the server to."""
    import streamlit.testing.v1.local_script_runner as lsr

    orig = lsr.RerunData
    lsr.RerunData = lambda **kw: orig(**kw, fragment_id_queue=[fid], is_auto_rerun=True)
    try:
        at.run()
    finally:
        lsr.RerunData = orig


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu(procs) -> float:
    total = 0.0
    for pr in procs:
        try:
            t = pr.cpu_times()
            total += t.user + t.system
        except Exception:  # noqa: BLE001 (a renderer that exited)
            pass
    return total


def open_closed(pairs: int, epochs: int, model: str, presenter: bool = False) -> None:
    """The --open-closed measurement (see the module docstring)."""
    import subprocess
    import urllib.request

    import psutil

    from engine.config import RunConfig
    from engine.jobs import comparison
    from engine.report import stats
    from engine.report.headline import ratio_text
    from engine.store import Store

    home = Path(tempfile.mkdtemp(prefix="speedlab-openclosed-"))
    os.environ["SPEEDLAB_HOME"] = str(home)
    port = _free_port()
    log = open(home / "streamlit.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                               f"--server.port={port}", "--server.address=127.0.0.1",
                               "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"],
                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                              env={**os.environ, "SPEEDLAB_HOME": str(home)})
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            time.sleep(0.5)
    server_ps = psutil.Process(server.pid)
    cfg = RunConfig(dataset="digits", model=model, epochs=epochs)
    rows = {"closed": [], "open": []}
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; {pairs} pairs, digits/{model}, "
          f"{epochs} epochs; server {url}" + ("; page in presenter mode (?mode=talk)" if presenter else ""))
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            # One browser for the whole benchmark (a user's browser is already running): each open
            # side opens the page in a new tab, lets its first draw settle, then measures.
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            for i in range(pairs):
                for side in (("closed", "open") if i % 2 == 0 else ("open", "closed")):
                    page = None
                    if side == "open":
                        page = browser.new_page(viewport={"width": 1280, "height": 720})
                        page.goto(url + ("/?mode=talk" if presenter else ""))
                        page.get_by_text("Presenter mode" if presenter else "SpeedLab · Train").first.wait_for(timeout=60_000)
                        time.sleep(SETTLE_S)
                    browser_ps = [c for c in psutil.Process().children(recursive=True)
                                  if "chrom" in c.name().lower()]
                    c0s, c0b, t0 = _cpu([server_ps]), _cpu(browser_ps), time.monotonic()
                    cid = comparison.start(cfg, kind="aa", pairs=1)
                    comp = comparison.wait(cid, poll_s=1.0)
                    wall = time.monotonic() - t0
                    # The browser's cost only where the page is open: a tab closed just before a
                    # closed side has a renderer still exiting, whose CPU would leave the sum.
                    cs, cb = _cpu([server_ps]) - c0s, (_cpu(browser_ps) - c0b if page is not None else None)
                    if page is not None:
                        page.close()
                    store = Store()
                    try:
                        runs = [store.get_run(x) for x in comp["result"]["baseline_ids"] + comp["result"]["run_ids"]]
                    finally:
                        store.close()
                    steady = statistics.mean(r["summary"]["samples_per_sec"] for r in runs)
                    e2e = statistics.mean(r["summary"]["end_to_end_samples_per_sec"] for r in runs)
                    rows[side].append({"steady": steady, "e2e": e2e, "wall": wall, "server": cs / wall,
                                       "browser": cb / wall if cb is not None else None})
                    brw = f"browser {cb / wall:.3f} CPU-s/s" if cb is not None else "no page open"
                    print(f"pair {i + 1} {side:>6}: steady {steady:,.0f} samples/s, end-to-end {e2e:,.0f}, "
                          f"wall {wall:.1f} s, server {cs / wall:.3f} CPU-s/s, {brw}", flush=True)
    finally:
        os.killpg(server.pid, 15)
    for key, name in (("steady", "steady samples/s"), ("e2e", "end-to-end samples/s")):
        s = stats.summarize([r[key] for r in rows["closed"]], [r[key] for r in rows["open"]], higher_is_better=True)
        ci = s["ci95"]
        print(f"{name}, open / closed: {ratio_text(s['speedup'], digits=3)}" + (f" [{ci[0]:.3f}–{ci[1]:.3f}]" if ci else "")
              + f", {s['verdict'] or 'no interval'}; pairs: {', '.join(f'{x:.3f}' for x in s['pair_ratios'])}"
              + ("  (target >= 0.98)" if key == "steady" else ""))
    o = rows["open"]
    print(f"page open: server {statistics.mean(r['server'] for r in o):.3f} + browser "
          f"{statistics.mean(r['browser'] for r in o):.3f} CPU-s per s of run (target together <= 0.05)")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


def page_cpu(seconds: float, rounds: int) -> None:
    """The --page-cpu measurement: server and browser CPU-s per second with the Train page
    open on a live plain run, in its two phases (engine.report.live_refresh): 'starting'
    (the newest execution is warm-up: refresh every 1 s, as every live run was before)
    and 'steady' (every 3 s), interleaved, `rounds` of each, `seconds` each."""
    import subprocess
    import urllib.request

    import psutil

    home = Path(tempfile.mkdtemp(prefix="speedlab-pagecpu-"))
    os.environ["SPEEDLAB_HOME"] = str(home)
    live = LiveRun(5000, int(seconds * rounds * 2) + 60, 100)
    port = _free_port()
    log = open(home / "streamlit.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                               f"--server.port={port}", "--server.address=127.0.0.1",
                               "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"],
                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                              env={**os.environ, "SPEEDLAB_HOME": str(home), "SPEEDLAB_WARM_WORKER": "0",
                                   "SPEEDLAB_QUEUE_IDLE_S": "5"})  # no spare worker beside the page
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            time.sleep(0.5)
    server_ps = psutil.Process(server.pid)
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; {rounds} rounds x {seconds:.0f} s "
          f"per phase, a live run growing 100 executions a second; server {url}")
    rows = {"starting": [], "steady": []}
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            live.grow(100, warm=True)
            page.goto(url)
            page.get_by_text("SpeedLab · Train").wait_for(timeout=60_000)
            for i in range(rounds):
                for side in (("starting", "steady") if i % 2 == 0 else ("steady", "starting")):
                    for _ in range(4):  # the phase change reruns the page: settle first
                        live.grow(100, warm=side == "starting")
                        time.sleep(1.0)
                    browser_ps = [c for c in psutil.Process().children(recursive=True)
                                  if "chrom" in c.name().lower()]
                    c0s, c0b, t0 = _cpu([server_ps]), _cpu(browser_ps), time.monotonic()
                    while time.monotonic() - t0 < seconds:
                        live.grow(100, warm=side == "starting")
                        time.sleep(1.0)
                    wall = time.monotonic() - t0
                    # The browser's cost only where the page is open: a tab closed just before a
                    # closed side has a renderer still exiting, whose CPU would leave the sum.
                    cs, cb = _cpu([server_ps]) - c0s, (_cpu(browser_ps) - c0b if page is not None else None)
                    rows[side].append((cs / wall, cb / wall))
                    print(f"round {i + 1} {side:>8}: server {cs / wall:.3f} + browser {cb / wall:.3f} CPU-s/s",
                          flush=True)
            browser.close()
    finally:
        os.killpg(server.pid, 15)
    for side, r in rows.items():
        srv, brw = statistics.mean(x[0] for x in r), statistics.mean(x[1] for x in r)
        print(f"{side:>8} (refresh {'1' if side == 'starting' else '3'} s): server {srv:.3f} + browser {brw:.3f} "
              f"= {srv + brw:.3f} CPU-s per s of run (target together <= 0.05)")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


def main() -> None:
    if "--page-cpu" in sys.argv:
        q = argparse.ArgumentParser()
        q.add_argument("--page-cpu", type=float, required=True, metavar="SECONDS")
        q.add_argument("--rounds", type=int, default=2)
        b = q.parse_args()
        return page_cpu(b.page_cpu, b.rounds)
    if "--open-closed" in sys.argv:
        q = argparse.ArgumentParser()
        q.add_argument("--open-closed", type=int, required=True, metavar="PAIRS")
        q.add_argument("--epochs", type=int, default=60)
        q.add_argument("--model", default="cnn")
        q.add_argument("--presenter", action="store_true", help="open the Train page in presenter mode")
        b = q.parse_args()
        return open_closed(b.open_closed, b.epochs, b.model, b.presenter)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--executions", type=int, default=50_000)
    p.add_argument("--refreshes", type=int, default=1000)
    p.add_argument("--rows-per-refresh", type=int, default=100,
                   help="executions the live run adds per second (digits CNN: about 100)")
    p.add_argument("--page-runs", type=int, default=20, help="full page runs measured")
    a = p.parse_args()
    os.environ["SPEEDLAB_HOME"] = tempfile.mkdtemp(prefix="speedlab-live-")
    os.environ["SPEEDLAB_WARM_WORKER"] = "0"  # measure the page, not a spare worker's start
    import logging

    import psutil
    from streamlit.testing.v1 import AppTest

    # Setting session state from this (non-script) thread warns once per call; harmless here.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(logging.ERROR)

    live = LiveRun(a.executions, a.refreshes + a.page_runs + 10, a.rows_per_refresh)
    proc = psutil.Process()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()

    def measured(fn) -> tuple[float, float]:
        live.grow(a.rows_per_refresh)
        c0, w0 = proc.cpu_times(), time.perf_counter()
        fn()
        c1 = proc.cpu_times()
        return (c1.user + c1.system) - (c0.user + c0.system), time.perf_counter() - w0

    for _ in range(5):  # warm: imports, caches
        measured(at.run)
    page = [measured(at.run) for _ in range(a.page_runs)]
    fid = live_fragment_id(at)
    how = "fragment runs"
    run_tick = (lambda: fragment_run(at, fid)) if fid else at.run
    if fid is None:
        how = "FULL PAGE runs (the live fragment was not found)"
    from views.components.live_charts import SLOW_REFRESH_S
    from views.train.live import LIVE_REFRESH_S

    every = max(round(SLOW_REFRESH_S / LIVE_REFRESH_S), 1)

    def tick(k: int) -> tuple[float, float]:
        if k % every == 0:  # the slower charts' turn, as at one refresh a second
            at.session_state["slow_charts"] = {}
        return measured(run_tick)

    for k in range(5):
        tick(k)
    rss0 = proc.memory_info().rss
    ticks, rss = [], []
    for k in range(a.refreshes):
        ticks.append(tick(k))
        if (k + 1) % 100 == 0:
            rss.append((k + 1, (proc.memory_info().rss - rss0) / 2**20))
    growth = (proc.memory_info().rss - rss0) / 2**20
    at.run()  # the whole page again, as the browser has it
    w0 = time.perf_counter()
    at.number_input(key="batch_size").set_value(256).run()
    change = time.perf_counter() - w0
    errors = [e.value for e in at.exception]
    cpu = [c for c, _ in ticks]
    wall = statistics.median(w for _, w in ticks)
    med = statistics.median(cpu)
    p90 = statistics.quantiles(cpu, n=10)[-1] if len(cpu) >= 2 else cpu[0]
    print(f"store: a running run with {a.executions:,} executions (+ a 2,000-execution baseline), growing by "
          f"{a.rows_per_refresh} executions and 1 system sample per refresh (to {live.i:,}); "
          f"{a.refreshes} {how} of the Train page's live view (AppTest, one process)")
    print(f"server CPU per live refresh ({how}): {med:.3f} s median, mean {statistics.mean(cpu):.3f}, "
          f"p90 {p90:.3f}, max {max(cpu):.3f}; goal (median) <= 0.2 s: {'met' if med <= 0.2 else 'NOT met'}")
    print(f"server CPU per full page run (reload or widget change): "
          f"{statistics.median(c for c, _ in page):.3f} s median of {len(page)}")
    print(f"wall per live refresh: {wall:.3f} s -> {1 / wall:.1f} refreshes/s")
    print(f"widget change (batch size) shown after {change:.2f} s; goal <= 1 s: {'met' if change <= 1 else 'NOT met'}")
    print(f"memory growth over {a.refreshes} refreshes once warm: {growth:+.1f} MB "
          f"({a.refreshes * a.rows_per_refresh:,} executions added); goal <= 50 MB: "
          f"{'met' if growth <= 50 else 'NOT met'}")
    if rss:
        print("  RSS growth after n refreshes: " + ", ".join(f"{n}: {mb:+.0f} MB" for n, mb in rss))
    if errors:
        print("page errors:", errors)


if __name__ == "__main__":
    main()
