"""TPU7x, B300, MI350X/MI355X and their systems; FP4 and int8 training; TPU tensor parallelism over the ICI torus."""

import pytest

from flopcast import api, catalog
from flopcast.errors import FlopcastError
from flopcast.model.system import Dtype
from flopcast.plan import search

TFLOPS, GB = 1e12, 1e9

NEW_CHIPS = {  # chip -> (bf16 peak TFLOP/s, memory GB, HBM TB/s) as their sources state them
    "tpu7x": (2307, 192 * 2**30 / GB, 7.38),
    "b300": (2250, 288, 8.0),
    "mi350x": (2307, 288, 8.0),
    "mi355x": (2517, 288, 8.0),
}


@pytest.mark.parametrize("chip", sorted(NEW_CHIPS))
def test_new_chip_loads_with_sane_ranges_and_sources(chip):
    c = catalog.load_chip(chip)
    bf16, mem, bw = NEW_CHIPS[chip]
    assert c.peak(Dtype.BF16) == pytest.approx(bf16 * TFLOPS)
    assert c.memory == pytest.approx(mem * GB, rel=1e-3)
    assert c.memory_bandwidth == pytest.approx(bw * 1e12)
    for d, v in c.peak_flops.items():
        assert 1e13 < v < 1e17, (chip, d, v)  # catches a prefix slip
    assert c.peak(Dtype.FP8) == pytest.approx(2 * c.peak(Dtype.BF16), rel=0.01)
    assert catalog.load_system(c.default_system).chip.id == chip
    src = catalog.sources()
    raw = catalog.raw("chip")[chip]
    assert raw["source"] in src and all(v in src for v in (raw.get("sources") or {}).values())


@pytest.mark.parametrize("system,chips", [("dgx-b300", 8), ("tpu7x-pod", 9216), ("tpu7x-4x8x8", 256),
                                          ("mi350x-8", 8), ("mi355x-8", 8), ("gb300-nvl72", 72)])
def test_new_system_scale_up_domain(system, chips):
    s = catalog.load_system(system)
    assert s.tiers[0].size == chips
    assert 1e10 < s.tiers[0].bandwidth < 2e12
    raw = catalog.raw("system")[system]
    assert raw["source"] in catalog.sources()


def test_fp4_formats_count_their_block_scales():
    assert Dtype.NVFP4.gemm_bytes == pytest.approx(0.5 + 1 / 16)  # 4 bits + an E4M3 scale per 16
    assert Dtype.MXFP4.gemm_bytes == pytest.approx(0.5 + 1 / 32)  # 4 bits + an E8M0 scale per 32
    assert all(d.quantized for d in (Dtype.FP8, Dtype.INT8, Dtype.NVFP4, Dtype.MXFP4))
    assert not Dtype.BF16.quantized


def test_fp4_training_where_the_chip_has_fp4_units_and_refused_where_not():
    kw = dict(tp=1, pp=1, micro_batch=1, global_batch=64, recompute="full", sharding="zero3")
    bf16 = api.train("llama3-8b", hardware="dgx-b300", chips=64, dtype="bf16", **kw)
    fp8 = api.train("llama3-8b", hardware="dgx-b300", chips=64, dtype="fp8", **kw)
    fp4 = api.train("llama3-8b", hardware="dgx-b300", chips=64, dtype="nvfp4", **kw)
    assert fp4.step_time_s < fp8.step_time_s < bf16.step_time_s
    # the FP8 weight copy shrinks to 4.5 bits in NVFP4: less memory than FP8
    assert fp4.memory_breakdown_bytes["other"] < fp8.memory_breakdown_bytes["other"]
    # attention, norms and ~16% of the GEMMs stay in BF16: far from 3x FP8's speed though the peak is 2.9x
    assert fp8.step_time_s / fp4.step_time_s < 2.0
    assert api.train("llama3-8b", hardware="mi355x-8", chips=64, dtype="mxfp4", **kw).step_time_s > 0
    with pytest.raises(FlopcastError, match="no NVFP4 units"):
        api.train("llama3-8b", hardware="mi355x-8", chips=64, dtype="nvfp4", **kw)
    with pytest.raises(FlopcastError, match="no NVFP4 units"):
        api.train("llama3-8b", hardware="p5.48xlarge", chips=64, dtype="nvfp4", **kw)


def test_fp4_searched_among_dtypes_where_supported():
    m, sys_ = catalog.load_model("llama3-8b"), catalog.system_for("dgx-b300")
    space = search.SearchSpace(tp=(1,), pp=(1,), micro_batch=(1,), global_batch=(64,),
                               dtype=(Dtype.BF16, Dtype.FP8, Dtype.NVFP4))
    out = search.search(m, sys_, 64, catalog.calibration(), space)
    assert Dtype(int(out.batch.dtype[out.order[0]])) == Dtype.NVFP4
    h100 = search.search(m, catalog.system_for("p5.48xlarge"), 64, catalog.calibration(), space)
    assert h100.n_fit > 0 and any("NVFP4" in k for k in h100.rejected)
    assert Dtype(int(h100.batch.dtype[h100.order[0]])) != Dtype.NVFP4


def test_int8_training_on_tpus_only():
    kw = dict(tp=1, pp=1, micro_batch=1, global_batch=64)
    int8 = api.train("llama3-8b", hardware="tpu-v5p-pod", chips=64, dtype="int8", **kw)
    bf16 = api.train("llama3-8b", hardware="tpu-v5p-pod", chips=64, dtype="bf16", **kw)
    assert int8.step_time_s < bf16.step_time_s  # v5p's int8 MXU rate is twice bf16
    with pytest.raises(FlopcastError, match="published for TPUs only"):
        api.train("llama3-8b", hardware="p5.48xlarge", chips=64, dtype="int8", **kw)
    with pytest.raises(FlopcastError, match="no published int8 peak"):
        api.train("llama3-8b", hardware="tpu7x-pod", chips=64, dtype="int8", **kw)


def test_tpu_tensor_parallelism_spans_the_ici_torus_of_a_slice():
    assert catalog.system_for("tpu-v5p-pod").tp_domain == 8960
    assert catalog.system_for("tpu7x-4x8x8").tp_domain == 256
    assert catalog.system_for("p5.48xlarge").tp_domain == 8  # NVLink stays within the node
    assert catalog.system_for("trn2.48xlarge").tp_domain == 16
    r = api.train("llama3-70b", hardware="tpu-v5p-pod", chips=256, tp=16, pp=1, micro_batch=1, global_batch=256)
    assert r.layout.tp == 16 and r.time_breakdown_s["comm/tp"] > 0
    # a group that crosses a torus dimension drives more links: 16 chips over two dimensions of v5p's torus
    with pytest.raises(FlopcastError, match="exceeds the 8 chips of one p5.48xlarge node"):
        api.train("llama3-70b", hardware="p5.48xlarge", chips=256, tp=16)
    with pytest.raises(FlopcastError, match="ICI slice"):
        api.train("llama3-70b", hardware="tpu7x-4x8x8", chips=512, tp=512)
