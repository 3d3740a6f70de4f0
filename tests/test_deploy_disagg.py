"""The deployment search considers disaggregated prefill/decode units (plan/disaggregate.py)."""

import json

import pytest

from flopcast import api, catalog
from flopcast.emit.engines import disaggregated_serve
from flopcast.plan import deploy as D
from flopcast.plan import disaggregate as split
from flopcast.simulate import serving as S


@pytest.fixture(scope="module")
def tight():
    """llama3-8b on p5.48xlarge at TTFT 0.5 s / TPOT 15 ms, 1,024 in / 256 out, fp8, max batch 64."""
    return D.deploy(catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge"),
                    S.ServingConfig(slo_ttft_s=0.5, slo_tpot_s=0.015), input_tokens="1024", output_tokens="256",
                    weights=("fp8",), kv_dtypes=("fp8",), max_seqs=(64,), requests=200)


def test_units_fill_an_instance_once_per_ratio():
    m, s = catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge")
    _, ok, _ = D._bounded(m, s, 512, 128, S.ServingConfig(slo_ttft_s=2, slo_tpot_s=0.05), ("fp8",), ("fp8",), (64,),
                          None)
    units = split.split_candidates(s, ok)
    assert units
    ratios = set()
    for c, pd in units:
        if c.replicas_per_instance == 0:  # whole-instance replicas: the KV cache over EFA
            assert pd.chips == 8 * c.instances_per_replica and pd.placement.value == "across-instances"
            assert pd.link.tier == s.tiers[-1].name
        else:
            assert s.chips_per_node % pd.chips == 0 and c.replicas_per_instance == s.chips_per_node // pd.chips
        key = (c.prefill_tp, c.tp, c.prefill_replicas, c.decode_replicas)
        assert key not in ratios
        ratios.add(key)
        # the slower pool bounds the unit (DistServe sec. 3-4)
        assert c.bound_qps == pytest.approx(D.BOUND_SLACK * min(c.prefill_replicas / c.prefill_s,
                                                                c.decode_replicas / c.decode_s))
    assert (1, 1, 1, 7) in ratios and (1, 1, 2, 2) not in ratios  # 2P2D is 1P1D twice
    assert (8, 8, 1, 1) in ratios and (8, 8, 1, 3) in ratios  # 1P1D and 1P3D of whole instances


def test_search_simulates_units_and_they_decode_faster(tight):
    units = [p for p in tight.simulated if isinstance(p.deployment, S.Disaggregated)]
    colo = {p.candidate.tp: p for p in tight.simulated if not isinstance(p.deployment, S.Disaggregated)}
    assert units and 1 in colo
    for p in units:
        d = p.to_dict()["disaggregated"]
        if p.candidate.replicas_per_instance:
            assert d["chips"] * p.candidate.replicas_per_instance == 8 and d["placement"] == "same-instance"
        if p.candidate.tp == 1 and p.candidate.prefill_tp == 1:  # same decode layout: no prefill stalls it
            assert p.result.tpot_s["p50"] < 0.85 * colo[1].result.tpot_s["p50"]


def test_whole_instance_check_and_launch(tight):
    p = next(p for p in tight.simulated if isinstance(p.deployment, S.Disaggregated)
             and p.candidate.replicas_per_instance > 1)
    v = split.verify_split(p, ("1024", "256"), S.ServingConfig(slo_ttft_s=0.5, slo_tpot_s=0.015), 200, 0)
    assert v.slo_attainment >= S.ATTAINMENT
    text = disaggregated_serve(p.deployment, units=p.candidate.replicas_per_instance, max_seqs=64).render()
    assert text.count("vllm serve llama3-8b") == 2 and text.count("NixlConnector") == 2
    assert "--data-parallel-size" in text


def test_no_disaggregate_leaves_them_out():
    o = D.deploy(catalog.load_model("llama3-8b"), catalog.system_for("p5.48xlarge"),
                 S.ServingConfig(slo_ttft_s=2, slo_tpot_s=0.05), weights=("fp8",), kv_dtypes=("fp8",), max_seqs=(64,),
                 requests=100, disaggregate=False)
    assert o.simulated and all(p.to_dict()["disaggregated"] is None for p in o.simulated)
    assert o.best.candidate.replicas_per_instance > 1
    assert api.deploy  # the command's API function takes `disaggregate` too


def test_deploy_trace_and_html(capsys, tmp_path):
    from flopcast.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0.0,300,100\n0.5,900,200\n1.0,2000,50\n")
    page = tmp_path / "d.html"
    assert main(["deploy", "llama3-8b", "-H", "p5.48xlarge", "--trace", str(trace), "--weights", "fp8", "--kv-dtype",
                 "fp8", "--requests", "50", "--no-disaggregate", "--json", "--html", str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trace"] == str(trace) and out["input_tokens"] == f"trace {trace}"
    assert out["systems"]["p5.48xlarge"]["best"] is not None
    html = page.read_text()
    assert "<svg" in html and "Simulated deployments" in html
    assert main(["deploy", "llama3-8b", "-H", "p5.48xlarge", "--trace", str(trace), "--input-tokens", "5"]) == 2


def test_compare_serve_runs_the_best_deployment_disaggregated_too(capsys):
    """compare --serve serves each system with deploy's best, here an xPyD unit filling the instance."""
    from flopcast.cli.plan import _print_serving

    res = api.compare("llama3-8b", "p5.48xlarge", serve=True, weights="fp8", kv_dtype="fp8", slo_ttft="0.5s",
                      slo_tpot="15ms", input_tokens="1024", output_tokens="256", requests=200)
    p = res.systems["p5.48xlarge"]
    assert p.split is not None and p.chips == 8 and p.capacity
    d = p.to_dict()
    assert d["disaggregated"]["chips"] == 8 and d["replicas"] == d["disaggregated"]["prefill_replicas"] + \
        d["disaggregated"]["decode_replicas"]
    assert d["slo_attainment"] >= S.ATTAINMENT and d["cost_per_million_output_tokens_usd"] > 0
    json.dumps(res.to_dict())
    _print_serving(res)
    assert f"{p.split.prefill_replicas}P{p.split.decode_replicas}D" in capsys.readouterr().out
