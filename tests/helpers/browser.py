"""Browser-test helpers: `streamlit run app.py` headless on a free loopback port with the
test's store (the `server` fixture), Chromium driven by Python playwright, and readers for
what a page drew. Importing this module skips the importing test module when Chromium or
playwright is missing. Browser tests import `server` by name (pyproject.toml's F811 note).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.waiting import wait_for  # noqa: F401 (browser tests import it from here)

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1600, "height": 1000}

if not Path(CHROMIUM).exists():
    pytest.skip(f"Chromium not found at {CHROMIUM}: install it (apt-get install chromium) to run "
                "the browser test", allow_module_level=True)
playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="Python playwright missing: pip install -r requirements-dev.txt")

# JS: markers Plotly has drawn in the throughput chart (points on screen).
THROUGHPUT_POINTS = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const title = (gd.layout && gd.layout.title && gd.layout.title.text) || '';
    if (title.includes('Throughput per execution'))
      return gd.querySelectorAll('.scatterlayer .trace .points path.point').length;
  }
  return 0;
}"""
SPEEDUP_VALUE = """() => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    const label = m.querySelector('[data-testid="stMetricLabel"]');
    if (label && label.innerText.trim() === 'Steady')
      return m.querySelector('[data-testid="stMetricValue"]').innerText.trim();
  }
  return null;
}"""
# JS: the headline metric's label and value (the time-to-accuracy speedup).
HEADLINE = """() => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    const label = m.querySelector('[data-testid="stMetricLabel"]');
    if (label && label.innerText.includes('val accuracy'))
      return [label.innerText.trim(), m.querySelector('[data-testid="stMetricValue"]').innerText.trim()];
  }
  return null;
}"""
# JS: the where-the-time-went chart: its part names and the number of bars drawn.
TIME_PARTS = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const title = (gd.layout && gd.layout.title && gd.layout.title.text) || '';
    if (title.includes('Where the time went'))
      return [gd.data.map(t => t.name), gd.querySelectorAll('.barlayer .point').length];
  }
  return null;
}"""
PAGE_HEIGHT = """() => Math.max(...[...document.querySelectorAll(
  '[data-testid="stMain"], [data-testid="stSidebarContent"]')].map(e => e.scrollHeight))"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Chart and metric boxes (and Plotly's own layout size): unchanged for quiet_ms means the
# page has drawn and Plotly has relayouted to its container; -1 when it never settles.
SETTLE = """async ([quietMs, timeoutMs]) => {
  const sig = () => [...document.querySelectorAll('.js-plotly-plot, [data-testid="stMetric"]')].map(e => {
    const r = e.getBoundingClientRect(), l = e._fullLayout || {};
    return [r.left, r.top, r.width, r.height, l.width || 0, l.height || 0].map(Math.round).join(',');
  }).join(';');
  const t0 = performance.now();
  let last = sig(), since = t0;
  while (performance.now() - t0 < timeoutMs) {
    await new Promise(r => setTimeout(r, 100));
    const now = sig();
    if (now !== last) { last = now; since = performance.now(); }
    else if (performance.now() - since >= quietMs) return performance.now() - t0;
  }
  return -1;
}"""


def settle(page, quiet_ms: int = 600, timeout_ms: int = 5000) -> None:
    """Wait until the page's charts and metrics keep their size and place for
    `quiet_ms` (Plotly relayouts to a new width some 100 ms after it), at most
    `timeout_ms` (a live page may never be still: then go on)."""
    page.evaluate(SETTLE, [quiet_ms, timeout_ms])


# JS: the page's script run has ended (Streamlit marks stApp; "initial" before the first run).
SCRIPT_IDLE = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'; }"""


def wait_js(page, expression: str, timeout_ms: int) -> None:
    """Wait until the JS `expression` is truthy in `page`, read every 100 ms, at most
    `timeout_ms` ms. Raises playwright's TimeoutError. Playwright's default reads it at every
    animation frame, which makes the page draw 60 frames a second while it waits: 0.27 CPU-s
    of Chromium per second of waiting against 0.03-0.06 read every 200 ms (2026-12-07)."""
    page.wait_for_function(expression, timeout=timeout_ms, polling=100)


def script_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the page's script run has ended (at most `timeout_ms` ms): what it draws is
    on the page, charts perhaps still laying out (`settle`). Raises playwright's TimeoutError."""
    wait_js(page, SCRIPT_IDLE, timeout_ms)


def full_screenshot(page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its main area, so grow the
    viewport to the content instead of using full_page."""
    height = page.evaluate(PAGE_HEIGHT)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], height + 40)})
    settle(page)  # Plotly relayouts to the new size
    page.screenshot(path=str(path))
    page.set_viewport_size(VIEWPORT)


def start_streamlit(home: Path, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` headless on a free loopback port with the store at `home`
    (its log in home/streamlit.log), started in a session of its own; returns (process, url)
    once /_stcore/health answers. `env` adds to or replaces this process's environment.
    Raises: pytest's failure when the server exits first, AssertionError after 60 s."""
    port = free_port()
    with open(home / "streamlit.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
             f"--server.port={port}", "--server.address=127.0.0.1", "--browser.gatherUsageStats=false",
             "--server.fileWatcherType=none"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env=env if env is not None else {**os.environ, "SPEEDLAB_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"

    def healthy():
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                return r.read() == b"ok"
        except OSError:
            return proc.poll() is not None and pytest.fail(
                "streamlit exited:\n" + (home / "streamlit.log").read_text()[-3000:])

    try:
        wait_for(healthy, 60, "the streamlit server")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc, url


@pytest.fixture
def server(store_home):
    proc, url = start_streamlit(store_home)
    try:
        yield url
    finally:
        stop_server(proc)


def stop_server(proc: subprocess.Popen) -> None:
    """Cancel what the store runs, then end the server and what it started (its session)."""
    from engine.jobs import runner

    runner.cancel_active()
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


class Chromium:
    """A module's Chromium: `new_page` opens pages in one browser context that all its tests
    share, so each page after the first finds the app's scripts fetched and compiled in that
    context's caches (a page in a context of its own, as `Browser.new_page` makes, loads them
    cold: 3.0 against 1.1 CPU-s of Chromium for a reload of the empty Train page, 2026-12-07).
    `browser` is the Browser itself, for a test that needs a context of its own (a fake clock
    is installed in a whole context)."""

    def __init__(self, browser):
        self.browser = browser
        self.context = browser.new_context()

    def new_page(self, viewport: dict | None = None):
        """A page in the shared context at `viewport` ({'width', 'height'}, px; Playwright's
        1280x720 when None), set before anything loads in it: a page opens at that size (a
        page resized after loading keeps Plotly's margins of its first size)."""
        page = self.context.new_page()
        if viewport:
            page.set_viewport_size(viewport)
        return page

    def close_pages(self) -> None:
        """Close every page a test opened: the shared context's and any context of its own."""
        for page in self.context.pages:
            page.close()
        for context in self.browser.contexts:
            if context is not self.context:
                context.close()


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """(url, chromium, home): one Streamlit server on a store of its own and one Chromium (a
    `Chromium`: pages in one shared context) for the whole module (new pages per test);
    SPEEDLAB_HOME is `home` in this process too. A module with it is in SHARED_MODULES
    (tests/conftest.py), so that it starts them once."""
    home = tmp_path_factory.mktemp("stage")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        proc, url = start_streamlit(home)
        try:
            with playwright_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    yield url, Chromium(browser), home
                finally:
                    browser.close()
        finally:
            stop_server(proc)


def empty_store(home: Path) -> None:
    """Make the module server's store at `home` a new, empty one (as a server of its own would
    start on): cancel what runs, wait until the queue has let go of the store (60 s at most),
    then remove everything in `home` but the server's log: the store, its run folders, the
    replay clock, the bench result. The server opens the store at every page run, so its next
    page run creates a new one. Raises: AssertionError when the queue is still alive after 60 s."""
    import shutil

    from engine.jobs import runner
    from engine.store import Store

    runner.cancel_active()
    with Store(home / "runs.sqlite") as store:
        wait_for(lambda: not store.active_runs() and not runner.queue_alive(store), 60,
                 "the queue to let go of the store")
    for path in home.iterdir():
        if path.name == "streamlit.log":
            continue
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


@pytest.fixture
def fresh_stage(stage):
    """`stage` with an empty store for this test (`empty_store`); the test's browser pages
    are closed after it (`Chromium.close_pages`)."""
    url, chromium, home = stage
    empty_store(home)
    try:
        yield stage
    finally:
        chromium.close_pages()
