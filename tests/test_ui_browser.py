"""The page in a real browser: Debian's headless Chromium, driven by Playwright, runs a forecast, follows a
change of the chip count (new figure, new numbers), compares two systems and shows a bad input's one line.

Skipped when Chromium or playwright is missing, unless FLOPCAST_REQUIRE_BROWSER=1 (CI sets it), then it fails.
Playwright's own browsers are never downloaded: it launches /usr/bin/chromium.
"""

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and Path(p).exists()), None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
        "--no-first-run", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 60_000


def _require(ok: bool, why: str):
    if not ok:
        if os.environ.get("FLOPCAST_REQUIRE_BROWSER") == "1":
            pytest.fail(f"FLOPCAST_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        import uvicorn

        from flopcast.ui import create_app
    except ImportError:
        _require(False, "starlette/uvicorn are not installed (pip install 'flopcast[ui]')")
    with socket.socket() as s:  # a free port on the loopback address
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(tmp_path_factory.mktemp("uploads")), host="127.0.0.1", port=port,
                                        log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def page(server):
    _require(CHROMIUM is not None, "/usr/bin/chromium is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require(False, "the playwright package is not installed (pip install playwright)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1200, "height": 900})
        pg.set_default_timeout(TIMEOUT_MS)
        problems = []
        pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        pg.goto(server)
        pg.wait_for_selector("body[data-loaded='1']")
        yield pg, problems
        browser.close()


def _seconds(text: str) -> float:
    return float(text.split()[0].replace(",", ""))


def _forecast(pg):
    pg.wait_for_selector("body[data-state='ready']")
    return pg.inner_text("#numbers"), pg.inner_html("#figure")


def test_forecast_follows_the_chip_count(page, tmp_path):
    pg, problems = page
    pg.select_option("#model", "narayanan-gpt-1.7b")
    pg.select_option("#hardware", "trn1.32xlarge")
    pg.fill("#chips", "16")
    pg.fill("#tokens", "100B")
    pg.click("#run")
    numbers, figure = _forecast(pg)
    assert "16 trainium1 chips" in pg.inner_text("#title")
    step = pg.inner_text("td[data-key='step_time_s']")
    assert _seconds(step) > 0
    assert "<rect" in figure and 'data-breakdown="time_breakdown_s"' in figure
    assert 'data-breakdown="memory_breakdown_gib"' in figure
    # the breakdown is laid out after the numbers arrive: wait (up to 10 s) for it to take room on the page
    pg.wait_for_function("() => { const r = document.querySelector('#breakdown').getBoundingClientRect();"
                         " return r.width * r.height > 0; }", timeout=10_000)
    pg.screenshot(path=str(tmp_path / "forecast-16.png"), full_page=True)

    pg.fill("#chips", "64")  # the page re-runs the forecast on the change, with no button pressed
    pg.wait_for_function("s => document.querySelector(\"td[data-key='step_time_s']\").textContent !== s", arg=step)
    numbers2, figure2 = _forecast(pg)
    assert "64 trainium1 chips" in pg.inner_text("#title")
    assert numbers2 != numbers and figure2 != figure
    assert _seconds(pg.inner_text("td[data-key='step_time_s']")) < _seconds(step)
    href = pg.get_attribute("#dl-csv", "href")
    assert href.startswith("/api/download?") and "chips=64" in href and "format=csv" in href
    pg.screenshot(path=str(tmp_path / "forecast-64.png"), full_page=True)
    assert problems == []


def test_compare_two_systems(page):
    pg, problems = page
    pg.fill("#systems", "trn1.32xlarge,p5.48xlarge")
    pg.click("#compare-run")
    pg.wait_for_selector("#compare-table")
    pg.wait_for_selector("body[data-state='ready']")
    cells = pg.query_selector_all("#compare-table td[data-key='step_time_s']")
    assert [c.get_attribute("data-system") for c in cells] == ["trn1.32xlarge", "p5.48xlarge"]
    assert len({c.inner_text() for c in cells}) == 2
    assert problems == []


def test_bad_input_shows_one_line(page):
    pg, problems = page
    pg.fill("#tp", "7")
    pg.wait_for_selector("body[data-state='error']")
    err = pg.inner_text("#error")
    assert err.startswith("error: ") and "tp=7" in err and "\n" not in err
    pg.fill("#tp", "")
    pg.wait_for_selector("body[data-state='ready']")
    assert pg.inner_text("#error") == ""
    # the 400 answer itself is logged by Chromium as a failed resource load; nothing else may be
    assert all("status of 400" in p for p in problems), problems


def test_intervals_and_new_breakdowns_render_generically(page):
    """A result with `*_low/*_high` and a breakdown the page has never seen draws them: the page names no field
    list it would need to keep in step with the results."""
    pg, problems = page
    pg.evaluate("""() => show({model: "m", chips: 8, chip: "c", hardware: "h", fits: true, layout: {tp: 8},
        step_time_s: 2.0, step_time_s_low: 1.5, step_time_s_high: 2.5, goodput_low: 0.9, goodput_high: 0.99,
        time_breakdown_s: {compute: 1.5, "comm/tp": 0.5}, cost_breakdown_usd: {chips: 80, energy: 20}})""")
    assert "[1.5 s – 2.5 s]" in pg.inner_text("td[data-key='step_time_s'] + td")
    assert pg.query_selector("td[data-key='goodput']") is not None
    assert pg.query_selector("[data-breakdown='cost_breakdown_usd']") is not None
    assert "100 USD" in pg.inner_text("#figure")
    assert problems == [] or all("status of 400" in p for p in problems)
