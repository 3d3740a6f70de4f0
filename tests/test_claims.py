"""`flopcast claims`: every announcement claim gets a row, a verdict by the stated rules, and traceable numbers."""

import json

import pytest
from click.testing import CliRunner

from flopcast import catalog, claims as C
from flopcast.cli import cli
from flopcast.model.system import Dtype

IDS = ("1a", "1b", "2", "3", "4", "5", "6", "7a", "7b", "7c", "7d")
NO_FIGURE = {"5", "6", "7d"}  # the announcement states no number for these


@pytest.fixture(scope="module")
def result():
    return C.evaluate(quick=True)


# ------------------------------------------------------------------ verdict rules on made-up numbers


@pytest.mark.parametrize("claimed, estimate, expected", [
    (4.0, 4.0, "consistent"),
    (4.0, 3.45, "consistent"),  # 13.75% below the claim
    (4.0, 4.6, "consistent"),  # exactly +15%
    (4.0, 3.3, "optimistic"),  # the claim is 21% above the estimate
    (1.3, 1.6, "pessimistic"),  # the claim understates
    (65.0, 14.0, "optimistic"),
    (2.0, None, "cannot tell"),
    (None, 1.0, "cannot tell"),
    (2.0, float("nan"), "cannot tell"),
])
def test_verdict_rule(claimed, estimate, expected):
    assert C.verdict(claimed, estimate) == expected


def test_verdict_tolerance_is_a_parameter():
    assert C.verdict(1.0, 1.1, tolerance=0.05) == "pessimistic"
    assert C.verdict(1.0, 1.1, tolerance=0.15) == "consistent"


@pytest.mark.parametrize("points, expected", [
    ([{"trn2_days": 30.0, "trn1_days": 120.0}], "consistent"),
    ([{"trn2_days": 90.0, "trn1_days": 300.0}, {"trn2_days": 40.0, "trn1_days": 100.0}], "consistent"),
    ([{"trn2_days": 90.0, "trn1_days": 300.0}, {"trn2_days": 60.0, "trn1_days": 200.0}], "optimistic"),
    ([{"trn2_days": 20.0, "trn1_days": 50.0}], "cannot tell"),  # Trainium1 takes weeks too
    ([{"trn2_days": 20.0, "trn1_days": None}], "consistent"),  # Trainium1 does not even fit
    ([{"trn2_days": None, "trn1_days": None}], "cannot tell"),
])
def test_weeks_rule(points, expected):
    assert C.weeks_verdict(points) == expected


def test_fabric_tier_of_a_group():
    system = catalog.system_for("trn2-ultracluster")  # neuronlink-v3 (16), neuronlink-z (64), efa-v3
    from flopcast.model.strategy import Layout

    lay = Layout(tp=16, pp=4, dp=8)
    t = C.fabric_tiers(system, lay)
    assert t == {"tp": "neuronlink-v3", "cp": "none", "dp": "efa-v3", "pp": "efa-v3"}
    assert C.fabric_tiers(system, Layout(tp=4, dp=4, pp=4)) == {"tp": "neuronlink-v3", "cp": "none",
                                                                 "dp": "neuronlink-v3", "pp": "neuronlink-z"}


# ------------------------------------------------------------------ the rows


def test_every_claim_has_a_complete_row(result):
    assert tuple(r.id for r in result.rows) == IDS
    for r in result.rows:
        assert r.verdict in C.VERDICTS
        assert r.why and r.why.endswith(".")
        assert r.assumptions and r.sources and r.unit
        assert (r.claimed is None) == (r.id in NO_FIGURE)
        # each verdict states its band: the prediction interval of that hardware (none for a security property)
        assert r.interval["basis"]
        if r.id == "7d":
            assert r.interval["kind"] == "none" and r.interval["relative"] is None
            continue
        assert r.interval["relative"] > 0
        if r.estimate is not None:
            assert r.interval["low"] < r.estimate < r.interval["high"]
        if r.interval["kind"] in ("trainium-training", "cpu-serving"):
            assert "prediction interval" in r.interval["basis"] and "uncertainty.yaml" in r.interval["basis"]


def test_band_sets_the_verdict():
    e = C.Estimate(1.0, ("a",), ("s",), "w.")
    assert C.Claim("x", "c", 1.2, "x", lambda *_: e).judge(e).verdict == "optimistic"  # spec band 15%
    # the Trainium2 band is its training forecasts' 80% interval (wider than 15% on the high side): a claim
    # just inside it is consistent, one just outside it optimistic
    row = C.Claim("x", "c", 1.0, "x", lambda *_: e, band="trainium-training").judge(e)
    assert row.interval["high"] > 1.15
    inside = C.Claim("x", "c", row.interval["high"] * 0.99, "x", lambda *_: e, band="trainium-training").judge(e)
    assert inside.verdict == "consistent"
    above = C.Claim("x", "c", row.interval["high"] * 1.01, "x", lambda *_: e, band="trainium-training").judge(e)
    assert above.verdict == "optimistic"
    # a duration's band is the reciprocal of a speed's
    days = C.Claim("x", "c", 1.0, "x", lambda *_: e, band="trainium-training", time_like=True).judge(e)
    assert days.interval["high"] == pytest.approx(1 / row.interval["low"])


def test_encrypted_interfaces_row_is_a_security_property(result):
    r = result.row("7d")
    assert r.verdict == "cannot tell" and r.estimate is None and r.claimed is None
    assert "security property" in r.why and "Nitro" in r.why and "no measured cost" in r.why.lower()


def test_scaling_runs_at_the_critical_batch(result):
    d = result.row("5").details
    assert d["critical_batch_seqs"] < 100_000 * C.WEAK_SEQS_PER_CHIP  # the 102M-token batch is not used
    assert max(p["global_batch_seqs"] for p in d["weak"]) <= d["critical_batch_seqs"]


def test_650_tflops_is_a_dense_catalog_dtype(result):
    row = result.row("1a")
    chip = catalog.load_chip("trainium2")
    dtype = row.details["matching_dtype"]
    peak = chip.peak(Dtype.parse(dtype))
    assert abs(peak - 650e12) <= 0.15 * 650e12
    assert dtype in ("bf16", "fp16", "tf32") and row.details["density"] == "dense"
    assert row.estimate == pytest.approx(100_000 * peak / 1e18)
    assert any("trainium2.peak_flops" in s for s in row.sources)


def test_sustained_is_below_peak_and_named(result):
    row = result.row("1b")
    assert 0 < row.details["mfu"] < 1
    assert row.estimate == pytest.approx(row.details["model_tflops_per_chip"] * row.details["chips"] / 1e6)
    assert row.verdict == "optimistic"
    assert any("gpt-300b on 100,000 x trainium2" in a for a in row.assumptions)


def test_trn2_vs_trn1_names_its_borrowed_calibration(result):
    row = result.row("2")
    assert "trainium1" in row.details["calibration_basis_trn2"]
    assert row.details["ratio_min"] <= row.estimate <= row.details["ratio_max"]
    assert row.why.startswith("at 1,024 chips")


def test_perf_per_watt_cannot_tell_names_missing_power(result):
    row = result.row("4")
    assert row.verdict == "cannot tell" and row.estimate is None
    assert set(row.details["missing_fields"]) == {"trainium1.power", "trainium2.power"}


def test_memory_changes_what_fits(result):
    d = result.row("3").details
    assert d["gpt300b_min_chips"]["trainium2"] < d["gpt300b_min_chips"]["trainium1"]
    counts = d["layout_counts"]
    assert counts["trainium2"]["fit"] > counts["trainium1"]["fit"]


def test_scaling_series_has_tiers(result):
    weak = result.series["scaling"]["weak"]
    assert [p["chips"] for p in weak] == C._sizes(True)
    assert all(set(p["fabric_tiers"]) == {"tp", "cp", "dp", "pp"} for p in weak)
    assert weak[-1]["fits"] and not weak[0]["fits"]  # gpt-300b does not fit on one 16-chip instance
    assert max(p["efficiency"] for p in weak if p["fits"]) == pytest.approx(1.0)


def test_time_to_train_series(result):
    ttt = result.series["time_to_train"]
    assert ttt["threshold_days"] == C.WEEKS_THRESHOLD_DAYS
    for a, b in zip(ttt["trainium2"], ttt["trainium1"]):
        assert a["chips"] == b["chips"]
        if a["expected_days"] and b["expected_days"]:
            assert a["expected_days"] < b["expected_days"]  # Trainium2 is faster at equal chips
            assert a["expected_days"] >= a["ideal_days"]


def test_graviton_decode_tracks_bandwidth_and_prefill_tracks_compute(result):
    g3, g4 = catalog.load_chip("graviton3"), catalog.load_chip("graviton4")
    bw = g4.memory_bandwidth / g3.memory_bandwidth
    compute = g4.peak(Dtype.INT8) / g3.peak(Dtype.INT8)
    cases = [c for c in result.series["graviton_speedups"] if c["basis"] == "socket" and c["fits"]]
    decode = [c["speedup"] for c in cases if c["phase"] == "decode" and c["batch"] == 1]
    prefill = [c["speedup"] for c in cases if c["phase"] == "prefill"]
    assert decode and prefill
    for s in decode:
        assert s == pytest.approx(bw, rel=0.05)
    for s in prefill:
        assert s == pytest.approx(compute, rel=0.08)
    assert result.row("7b").estimate == pytest.approx(1.5)
    assert result.row("7c").estimate == pytest.approx(1.75)


def test_70b_bf16_reported_when_it_does_not_fit(result):
    cases = result.series["graviton_speedups"]
    big = [c for c in cases if c["model"] == "llama3-70b" and c["weights"] == "bf16" and c["basis"] == "equal_cores"]
    assert big and all(not c["fits"] and c["speedup"] is None for c in big)
    assert any("does not fit" in a for a in result.row("7a").assumptions)


def test_to_dict_is_plain_json(result):
    d = json.loads(json.dumps(result.to_dict()))
    assert [c["id"] for c in d["claims"]] == list(IDS)
    for c in d["claims"]:
        assert set(c) >= {"id", "claim", "estimate", "unit", "assumptions", "sources", "verdict", "why", "details"}
        assert c["estimate"] is None or isinstance(c["estimate"], (int, float))
    assert set(d["series"]) == {"scaling", "time_to_train", "trn2_vs_trn1", "graviton_speedups"}


def test_cli_json_parses(result, monkeypatch):
    monkeypatch.setattr(C, "evaluate", lambda quick=False, progress=None, calibration=None, **executor: result)
    out = CliRunner().invoke(cli, ["claims", "--json", "--quick"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert len(d["claims"]) == len(IDS)


def test_cli_text_table(result, monkeypatch):
    monkeypatch.setattr(C, "evaluate", lambda quick=False, progress=None, calibration=None, **executor: result)
    out = CliRunner().invoke(cli, ["claims", "--quick"])
    assert out.exit_code == 0, out.output
    assert "verdict rules:" in out.output and "+-15%" in out.output
    for r in result.rows:
        assert f"[{r.id}]" in out.output
    from test_text_output import misaligned, too_wide

    assert not too_wide(out.output) and not misaligned(out.output), (too_wide(out.output), misaligned(out.output)[:3])


def test_claims_report_draws_its_series(result):
    pytest.importorskip("matplotlib")
    from flopcast.report.figures import claims_report

    rep = claims_report(result)
    html = rep.to_html()
    assert rep.file_names() == ["claims-time-to-train", "claims-scaling", "claims-trn2-vs-trn1", "claims-graviton"]
    assert html.count("<svg") == 4 and "http://" not in html.replace("http://www.w3.org", "")
    # the verdict table carries every claim
    assert all(r.id in html for r in result.rows)


# ------------------------------------------------------------------ the independent pieces on the sweep executor


def _without_time(r) -> dict:
    d = r.to_dict()
    d.pop("elapsed_s")
    return d


def test_groups_cover_every_claim_once_and_keep_claim_4_with_claim_2():
    from flopcast.claims import table

    ids = [i for g in table.groups() for i in g]
    assert sorted(ids) == sorted(c.id for c in C.CLAIMS) and len(ids) == len(set(ids))
    assert any({"2", "4"} <= set(g) for g in table.groups())  # claim 4 reads claim 2's row


def test_two_workers_give_the_rows_of_one(result):
    said = []
    two = C.evaluate(quick=True, workers=2, progress=said.append)
    assert _without_time(two) == _without_time(result)
    assert [r.id for r in two.rows] == list(IDS)
    assert sorted(said) == sorted(c.progress for c in C.CLAIMS if c.progress)


def test_claims_bad_worker_count_is_one_sentence():
    from flopcast.errors import FlopcastError

    with pytest.raises(FlopcastError, match="workers must be a positive integer"):
        C.evaluate(quick=True, workers=0)
    r = CliRunner().invoke(cli, ["claims", "--quick", "--address", "auto"])
    assert isinstance(r.exception, FlopcastError) and "--address is for --engine ray" in str(r.exception)


def test_fitting_decides_once_whether_a_model_fits():
    """Runs.fitting: None without a search where the states alone exceed the HBM, else train()'s forecast where
    it fits; the memory claim asks it at both of its questions (largest model per instance, smallest cluster)."""
    from flopcast.claims.evidence import GPT300B, TRN1, TRN2, Runs

    runs = Runs(True)
    assert runs.fitting(GPT300B, TRN1, 16) is None
    assert not any(isinstance(k, tuple) and k[:3] == (GPT300B, TRN1, 16) for k in runs._cache)  # no search ran
    r = runs.fitting("llama2-7b", TRN2, 16)
    assert r is not None and r.fits and r is runs.train("llama2-7b", TRN2, 16)
