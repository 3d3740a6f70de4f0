"""Figures and HTML reports: the pipeline schedule generator, self-contained HTML, PNGs, the CLI."""

import re
import subprocess
import sys

import pytest

from flopcast import api
from flopcast.cli import main
from flopcast.errors import FlopcastError
from flopcast.report import plots
from flopcast.report.html import Report, inline_svg

SMALL = dict(model="narayanan-gpt-1.7b", hardware="trn1.32xlarge", chips=16)


# ---------------------------------------------------------------- the schedule generator (no matplotlib needed)


@pytest.mark.parametrize("kind,v", [("1f1b", 1), ("gpipe", 1), ("interleaved", 2), ("interleaved", 3), ("interleaved",
    4)])
@pytest.mark.parametrize("p,m_per_p", [(2, 1), (4, 1), (4, 2), (8, 3)])
@pytest.mark.parametrize("t_f,t_b", [(1.0, 2.0), (1.0, 1.0)])
def test_schedule_idle_is_the_papers_bubble(kind, v, p, m_per_p, t_f, t_b):
    """Narayanan et al. 2021 sec. 2.2 / Huang et al. 2019: idle = (p - 1)/(v m) of the busy time."""
    m = p * m_per_p
    s = plots.pipeline_schedule(kind, p, m, v, t_forward=t_f, t_backward=t_b)
    v_eff = v if kind == "interleaved" else 1
    assert s.bubble_fraction == pytest.approx((p - 1) / (v_eff * m), rel=1e-12)
    assert s.busy_s == pytest.approx(p * m * (t_f + t_b))
    assert s.makespan_s == pytest.approx((m + (p - 1) / v_eff) * (t_f + t_b))


@pytest.mark.parametrize("kind", ["1f1b", "gpipe"])
def test_schedule_fewer_micro_batches_than_stages(kind):
    s = plots.pipeline_schedule(kind, 8, 3, t_forward=1.0, t_backward=2.0)
    assert s.bubble_fraction == pytest.approx(7 / 3)


def test_schedule_order_every_pass_once_and_1f1b_warmup():
    p, m, v = 4, 8, 2
    for r in range(p):
        order = plots.schedule_order("interleaved", p, m, v, r)
        assert sorted(order) == sorted([(k, i, c) for k in ("forward", "backward") for i in range(m) for c in range(v)])
        one = plots.schedule_order("1f1b", p, m, 1, r)
        assert [k for k, _, _ in one[: p - r]] == ["forward"] * (p - r) and one[p - r][0] == "backward"


def test_interleaved_needs_a_multiple_of_pp():
    with pytest.raises(FlopcastError, match="multiple of pp"):
        plots.pipeline_schedule("interleaved", 4, 6, 2)


def test_p2p_delays_and_is_recorded():
    base = plots.pipeline_schedule("1f1b", 4, 8, t_forward=1.0, t_backward=2.0)
    slow = plots.pipeline_schedule("1f1b", 4, 8, t_forward=1.0, t_backward=2.0, t_p2p=0.1)
    assert slow.makespan_s > base.makespan_s
    recv = [o for o in slow.ops if o.recv_start is not None]
    assert recv and all(o.recv_end - o.recv_start == pytest.approx(0.1) and o.start >= o.recv_end for o in recv)
    # stage 0's forwards and the last stage's first backward of each micro-batch receive nothing
    assert all(o.recv_start is None for o in slow.ops if o.stage == 0 and o.kind == "forward")


@pytest.fixture(scope="module")
def piped():
    return api.train(SMALL["model"], SMALL["hardware"], SMALL["chips"], tokens=1e10, tp=1, pp=2, micro_batch=1,
                     global_batch=64)


def test_stage_times_reproduce_the_models_bubble(piped):
    st = plots.stage_times(piped)
    assert (st.p, st.m) == (2, piped.layout.microbatches)
    assert st.t_backward >= 2 * st.t_forward * (1 - 1e-12) and st.t_forward > 0 and st.t_p2p > 0
    # the model charges (p - 1)/v busiest-stage micro-batch times as bubble (simulate/training.py)
    assert (st.p - 1) / st.v * (st.t_forward + st.t_backward) == pytest.approx(piped.time_breakdown_s["bubble"])


# ---------------------------------------------------------------- matplotlib is optional


def test_missing_matplotlib_is_one_line(monkeypatch, tmp_path, capsys):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with pytest.raises(FlopcastError) as exc:
        plots.matplotlib_figure()
    assert str(exc.value) == "plots need matplotlib: pip install 'flopcast[report]'"
    capsys.readouterr()
    assert main(["report", "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err == "error: plots need matplotlib: pip install 'flopcast[report]'\n"
    assert not (tmp_path / "r.html").exists()


def test_core_imports_without_matplotlib():
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import flopcast.api, flopcast.cli, flopcast.report.plots, flopcast.report.html, flopcast.report.figures\n"
            "assert flopcast.report.plots.pipeline_schedule('1f1b', 2, 2).bubble_fraction == 0.5\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ---------------------------------------------------------------- reports

pytest.importorskip("matplotlib")

from flopcast.report import figures  # noqa: E402  (after the skip: the builders need matplotlib to draw)

FIGURE_NAMES = ["breakdown", "pipeline", "scaling", "pareto", "goodput", "serving", "roofline"]


@pytest.fixture(scope="module")
def full_report():
    """Every figure of `flopcast report` on a quick scenario (pp pinned to 2 so the schedule is drawn)."""
    return figures.build_report(SMALL["model"], SMALL["hardware"], SMALL["chips"], requests=20,
                                   scaling_chips=[16, 32], layout={"pp": 2}, progress=lambda *a: None)


def test_report_has_every_figure(full_report):
    assert full_report.file_names() == FIGURE_NAMES
    for f in full_report.figures:
        for ax in f.figure.axes:  # every axis of every chart says what it measures, with its unit
            if ax.get_visible() and ax.has_data():
                assert ax.get_ylabel(), (f.name, ax.get_title())
                assert ax.get_xlabel() or ax in f.figure.axes[:-1], (f.name, ax.get_title())
                assert "(" in ax.get_ylabel(), (f.name, ax.get_ylabel())


def test_scaling_curves_draw_the_prediction_interval_as_bands(full_report):
    from matplotlib.collections import PolyCollection

    chart = next(f for f in full_report.figures if f.name == "scaling")
    banded = [ax for ax in chart.figure.axes if any(isinstance(c, PolyCollection) for c in ax.collections)]
    assert len(banded) == 3  # time to train (with failures) or throughput, MFU, cost or chip-hours
    for ax in banded:
        band = next(c for c in ax.collections if isinstance(c, PolyCollection))
        (_, y), line = band.get_paths()[0].vertices.T, ax.get_lines()[-1] if ax.get_lines() else None
        lo, hi = y.min(), y.max()
        assert line is not None and all(lo <= v <= hi for v in line.get_ydata())  # the forecast inside its band
    assert "prediction interval" in chart.caption


def test_png_files(full_report, tmp_path):
    files = full_report.write_png(tmp_path / "png")
    assert [p.name for p in files] == [f"{n}.png" for n in FIGURE_NAMES]
    for p in files:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def self_contained(text: str) -> None:
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//|<link\b|<script[^>]*\bsrc=", text, re.I)


def test_html_is_self_contained(full_report, tmp_path):
    path = full_report.write_html(tmp_path / "report.html")
    text = path.read_text()
    self_contained(text)
    assert text.count("<svg") == len(FIGURE_NAMES) == text.count('<figure class="chart"')
    assert '<div id="render-check">' in text and "window.onerror" in text
    # ids inside the inline SVGs are unique on the page
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))


def test_inline_svg_prefixes_ids():
    svg = ('<?xml version="1.0"?>\n<svg><defs><clipPath id="c1"/></defs>'
           '<g clip-path="url(#c1)"><use xlink:href="#c1"/></g></svg>')
    out = inline_svg(svg, "fig-a")
    assert out.startswith("<svg") and 'id="fig-a-c1"' in out and "url(#fig-a-c1)" in out and 'href="#fig-a-c1"' in out


def test_compare_and_generic_figures(piped, tmp_path):
    other = api.train(SMALL["model"], "p4d.24xlarge", 16, tokens=1e10, tp=1, pp=2, micro_batch=1, global_batch=64)
    charts = plots.figures_compare({"trn1.32xlarge": piped, "p4d.24xlarge": other, "tpu-v4-pod": "no layout fits"})
    bars = plots.bar_figure("claims", "claimed vs forecast", ["claim A", "claim B"],
                            {"claimed": [10.0, None], "flopcast": [12.0, 3.0]}, "time to train (days)")
    rep = Report("compare").add("systems", "text", header=["a", "b"], rows=[[1, 2]], figures=charts + [bars])
    assert rep.file_names() == ["compare", "compare-breakdown", "claims"]
    text = rep.to_html()
    self_contained(text)
    assert text.count("<svg") == 3 and "tpu-v4-pod: no layout fits" in text


def test_cli_report_writes_html(tmp_path, capsys):
    out = tmp_path / "sub" / "r.html"
    rc = main(["report", SMALL["model"], "--hardware", SMALL["hardware"], "--chips", "16", "--sizes", "16",
               "--requests", "20", "--html", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "drawing the report: 5 steps in" in err and f"wrote {out}" in err
    text = out.read_text()
    self_contained(text)
    assert text.count("<svg") == text.count('<figure class="chart"') >= 6


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["report", "--sizes", "x", "--html", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_commands_offer_html_and_png(tmp_path, capsys):
    assert main(["infer", "llama3-8b", "--hardware", "inf2.48xlarge", "--batch", "4", "--png", str(tmp_path)]) == 0
    assert (tmp_path / "roofline.png").exists()
    capsys.readouterr()
    assert main(["train", SMALL["model"], "--hardware", SMALL["hardware"], "--chips", "16", "--tp", "1", "--pp", "2",
                 "--micro-batch", "1", "--global-batch", "64", "--json", "--html", str(tmp_path / "t.html")]) == 0
    captured = capsys.readouterr()
    assert captured.out.lstrip().startswith("{") and "wrote" in captured.err
    assert (tmp_path / "t.html").read_text().count("<svg") == 2


def test_compare_serve_html(tmp_path, capsys):
    out = tmp_path / "cs.html"
    assert main(["compare", "llama3-8b", "--hardware", "c7g.16xlarge,p5.48xlarge", "--serve", "--chips", "1",
                 "--requests", "40", "--slo-ttft", "20s", "--slo-tpot", "1s", "--html", str(out)]) == 0
    text = out.read_text()
    self_contained(text)
    assert text.count("<svg") == 1 and "c7g.16xlarge" in text and "p5.48xlarge" in text
