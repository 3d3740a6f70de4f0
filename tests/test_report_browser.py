"""The HTML report in a real browser: headless Chromium loads it offline and its render check reads `ok N`.

Skipped when Chromium is not installed, unless FLOPCAST_REQUIRE_BROWSER=1 (CI sets it), then it fails.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from flopcast.report import figures  # noqa: E402

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and Path(p).exists()), None)
TIMEOUT_S = 90


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("FLOPCAST_REQUIRE_BROWSER") == "1":
            pytest.fail("FLOPCAST_REQUIRE_BROWSER=1 but /usr/bin/chromium is missing (apt-get install chromium)")
        pytest.skip("chromium is not installed")
    return CHROMIUM


def dump_dom(browser: str, page: Path) -> str:
    """The DOM after load, as headless Chromium renders the page with no network and a fresh profile."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def render_check(dom: str) -> str:
    m = re.search(r'<div id="render-check">([^<]*)</div>', dom)
    assert m, dom[-2000:]
    return m.group(1).strip()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    rep = figures.build_report("narayanan-gpt-1.7b", "trn1.32xlarge", 16, requests=20, scaling_chips=[16],
                                  layout={"pp": 2}, progress=lambda *a: None)
    path = rep.write_html(tmp_path_factory.mktemp("browser") / "report.html")
    return path, len(rep.figures)


def test_every_figure_renders_in_chromium(browser, page):
    path, n = page
    assert n == 7
    assert render_check(dump_dom(browser, path)) == f"ok {n}"


@pytest.mark.parametrize("inserted,expected", [
    ('<figure class="chart" id="fig-empty"><svg width="0" height="0"></svg></figure>',
     "error: empty figure(s): fig-empty"),
    ("<script>notDefinedAnywhere();</script>", "error: Uncaught ReferenceError: notDefinedAnywhere is not defined"),
])
def test_the_check_reports_failures(browser, page, tmp_path, inserted, expected):
    path, _ = page
    bad = tmp_path / "broken.html"
    bad.write_text(path.read_text().replace('<div id="render-check">', inserted + '\n<div id="render-check">', 1))
    assert render_check(dump_dom(browser, bad)) == expected
