"""No efficiency flopcast uses exceeds what the hardware was measured to do."""

from flopcast import catalog
from flopcast.cost.efficiency import MEMORY_CEILING, Calibration, FamilyEfficiency
from flopcast.model.system import Dtype
from flopcast.validate import calibrate as cb
from flopcast.validate import training as vt


def _chips():
    return [catalog.load_chip(cid) for cid in catalog.raw("chip")]


def test_shipped_efficiencies_stay_under_each_chips_measured_ceiling():
    cal = catalog.calibration()
    for chip in _chips():
        fam = cal.for_chip(chip)
        assert fam.memory <= MEMORY_CEILING + 1e-12, chip.id
        for key, dtype in (("gemm", Dtype.BF16), ("gemm_fp8", Dtype.FP8), ("attention", Dtype.BF16)):
            ceiling = chip.mamf_fraction(dtype)
            if ceiling:
                assert getattr(fam, key) <= ceiling + 1e-12, (chip.id, key, getattr(fam, key), ceiling)


def test_an_overfitted_family_is_cut_to_the_ceiling():
    b200 = catalog.load_chip("b200")
    cal = Calibration(families={b200.family: FamilyEfficiency(gemm=0.99, gemm_fp8=0.99, attention=0.99, memory=0.99)})
    fam = cal.for_chip(b200)
    assert fam.gemm == b200.mamf_fraction(Dtype.BF16) and fam.gemm_fp8 == b200.mamf_fraction(Dtype.FP8)
    assert fam.memory == MEMORY_CEILING


def test_the_fit_cannot_go_above_the_ceiling():
    cases, _ = vt.load_cases("calibration_runs")
    for p in cb._parameters(cases):
        assert p.lo <= p.prior <= p.hi
        if p.family and p.name in ("gemm", "gemm_fp8"):
            chips = [c for c in _chips() if c.family == p.family and c.mamf_fraction(
                Dtype.FP8 if p.name == "gemm_fp8" else Dtype.BF16)]
            if chips:
                assert p.hi == max(c.mamf_fraction(Dtype.FP8 if p.name == "gemm_fp8" else Dtype.BF16) for c in chips)


def test_a_family_fit_is_shared_out_by_each_chips_measured_ceiling():
    """Within a fitted family the chips' GEMM efficiencies differ as their measured matmul ceilings do: GB200's FP8
    MAMF is 0.723 of its peak, B200's 0.763, so below both ceilings GB200 gets 0.723/0.763 of B200's efficiency;
    a chip with no MAMF of its own (GB300) takes the family's value as fitted."""
    b200, gb200, gb300 = (catalog.load_chip(c) for c in ("b200", "gb200", "gb300"))
    fam = FamilyEfficiency(gemm=0.5, gemm_fp8=0.5, attention=0.4, memory=0.8)
    cal = catalog.with_mamf_transfer(Calibration(families={b200.family: fam}))
    mean = cal.mamf_family[b200.family]["gemm_fp8"]
    assert min(b200.mamf_fraction(Dtype.FP8), gb200.mamf_fraction(Dtype.FP8)) < mean < max(
        b200.mamf_fraction(Dtype.FP8), gb200.mamf_fraction(Dtype.FP8))
    for chip in (b200, gb200):
        assert cal.for_chip(chip).gemm_fp8 == 0.5 * chip.mamf_fraction(Dtype.FP8) / mean
    ratio = cal.for_chip(gb200).gemm_fp8 / cal.for_chip(b200).gemm_fp8
    assert abs(ratio - gb200.mamf_fraction(Dtype.FP8) / b200.mamf_fraction(Dtype.FP8)) < 1e-12
    # measured FLOP/s: GB200's FP8 GEMMs 5.3% faster than B200's, not the peaks' 11%
    rate = {c.id: cal.for_chip(c).gemm_fp8 * c.peak_flops[Dtype.FP8] for c in (b200, gb200)}
    assert 1.04 < rate["gb200"] / rate["b200"] < 1.06
    assert not gb300.mamf and cal.for_chip(gb300).gemm_fp8 == 0.5
    # without a family mean (no catalogued chip of the family has a MAMF) the fit is used as it is
    assert catalog.calibration_from_dict({"families": {"tpu": vars(fam)}}).for_chip(catalog.load_chip("tpu-v6e")).gemm \
        == 0.5
