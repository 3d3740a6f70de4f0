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
