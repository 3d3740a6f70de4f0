"""torchtitan's training mechanisms flopcast models for the runs of its benchmark files: per-operator selective
activation checkpointing (Recompute.OP) in time, FLOPs and memory."""

import pytest

import flopcast
from flopcast import catalog
from flopcast.cost import memory
from flopcast.model.strategy import SEARCHED_RECOMPUTE, Recompute
from flopcast.simulate.flops import _op_flops_per_token

# torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 1: Llama 3.1 8B, FSDP 8, local batch 2, selective op AC
TABLE1 = dict(model="llama3-8b", hardware="grand-teton-h100", chips=8, tp=1, pp=1, cp=1, micro_batch=2,
              global_batch=16, sharding="zero3", dtype="bf16")


def test_op_recomputation_repeats_every_second_matmul_of_a_llama_block():
    # wk (4096 x 1024), wo (4096 x 4096), w3 (4096 x 14336): 2 FLOPs per weight, 32 layers
    m = catalog.load_model("llama3-8b")
    assert _op_flops_per_token(m) == pytest.approx(2 * 4096 * (1024 + 4096 + 14336) * 32)


def test_op_recomputation_costs_time_between_selective_and_full():
    t = {rc: flopcast.train(**TABLE1, recompute=rc) for rc in ("selective", "op", "full")}
    rec = {rc: r.time_breakdown_s["recompute"] for rc, r in t.items()}
    assert rec["selective"] < rec["op"] < rec["full"]
    # the repeated GEMMs are about a sixth of the forward GEMM FLOPs (19,456 of 6 x 4096 + 2 x 1024 + 3 x 14336 per
    # row of hidden), plus the elementwise kernels
    assert 0.1 < rec["op"] / t["op"].time_breakdown_s["compute"] < 0.2
    assert t["full"].hfu > t["op"].hfu > t["selective"].hfu - 0.05


def test_op_recomputation_keeps_every_other_matmul_output():
    m = catalog.load_model("llama3-8b")
    kw = dict(sp=False, moe_layer=False)
    op, none, full = (memory.layer_activation_bytes(m, 8192, 2, 1, recompute=rc, **kw)
                      for rc in (Recompute.OP, Recompute.NONE, Recompute.FULL))
    # kept per token: block input and MLP output (2h), Q, V, attention output, the MLP's first projection
    per_token = 2 * (2 * 4096 + 4096 + 1024 + 4096 + 14336) + 4.0 * 2 * 32
    assert op == pytest.approx(8192 * 2 * per_token)
    assert full < op < none


def test_a_search_does_not_pick_a_frameworks_own_policy():
    assert Recompute.OP not in SEARCHED_RECOMPUTE
    r = flopcast.train(**{k: v for k, v in TABLE1.items()})
    assert r.layout.recompute != Recompute.OP


def test_vanilla_tensor_parallelism_hides_no_collective():
    from dataclasses import replace

    from flopcast.model.strategy import MODERN_SOFTWARE, Layout, LayoutBatch
    from flopcast.simulate import training

    model, system, cal = catalog.load_model("llama3-8b"), catalog.load_system("grand-teton-h100"), catalog.calibration()
    lb = LayoutBatch.of([Layout(tp=8, dp=8, micro_batch=12, global_batch=96, recompute=Recompute.OP,
                                sequence_parallel=True)])
    tp = {o: training.evaluate(model, system, lb, cal, software=replace(MODERN_SOFTWARE, tp_comm_overlap=o))
          ["time_parts"]["comm/tp"][0] for o in (True, False)}
    assert cal.tp_overlap > 0 and tp[True] == pytest.approx(tp[False] * (1 - cal.tp_overlap))


def test_a_row_states_its_tensor_parallel_overlap_and_torchtitan_defaults_to_none():
    from flopcast.errors import FlopcastError
    from flopcast.validate import training as vt

    row = {"source": "torchtitan-2024-12", "date": "2024-12-26", "framework": "torchtitan"}
    assert vt._row_software(row, ())[0].tp_comm_overlap is False
    assert vt._row_software({**row, "tp_comm_overlap": "yes"}, ())[0].tp_comm_overlap is True
    assert vt._row_software({**row, "framework": "megatron"}, ())[0].tp_comm_overlap is True
    with pytest.raises(FlopcastError, match="tp_comm_overlap"):
        vt._row_software({**row, "tp_comm_overlap": "async"}, ())
