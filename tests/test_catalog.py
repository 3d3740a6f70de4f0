"""Every catalog number is in a sane range and has a source; user files work like built-in entries."""

from dataclasses import replace

import pytest

from flopcast import catalog
from flopcast.report.catalog import _flatten
from flopcast.errors import FlopcastError
from flopcast.units import GiB, parse


def _numbers(entry):
    """Every scalar field of an entry, by the dotted path `flopcast catalog NAME` shows."""
    for path, v in _flatten(entry):
        if isinstance(v, (int, float, str)) and not isinstance(v, bool):
            yield path, v


@pytest.mark.parametrize("kind", ["chip", "system", "model"])
def test_every_number_has_a_known_source(kind):
    srcs = catalog.sources()
    for key, entry in catalog.raw(kind).items():
        assert entry.get("source"), f"{key} has no default source"
        overrides = entry.get("sources") or {}
        for path, _ in _numbers(entry):
            sid = overrides.get(path) or entry.get("source")
            for s in (sid if isinstance(sid, list) else [sid]):
                assert s in srcs, f"{kind} {key}: {path} cites unknown source {s!r}"


def test_chip_figures_in_sane_ranges():
    for key in catalog.names("chip"):
        c = catalog.load_chip(key)
        for dtype, peak in c.peak_flops.items():
            assert 1e11 < peak < 1e17, (key, dtype, peak)
        assert 1e10 < c.memory_bandwidth < 2e13, key
        if c.memory:
            assert 8 * GiB <= c.memory <= 2048 * GiB, key
        if c.power:
            assert 50 < c.power < 2000, key


def test_system_figures_in_sane_ranges():
    for key in catalog.names("system"):
        s = catalog.load_system(key)
        for t in s.tiers:
            assert 1e8 < t.bandwidth < 5e12, (key, t.name)
            assert 0 <= t.latency < 1e-3, (key, t.name)
        sizes = [t.size for t in s.tiers]
        assert sizes == sorted(sizes), key
        if s.price_per_hour is not None:
            assert 0.01 < s.price_per_hour < 500, key  # c7g.medium: 0.036 USD/h


def test_required_entries_exist():
    for chip in ["trainium1", "trainium2", "trainium3", "inferentia2", "a100-40gb", "a100-80gb", "h100-sxm", "h800",
                 "h200", "b200", "gb200", "gb300", "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p", "gaudi2",
                 "graviton3", "graviton3e", "graviton4"]:
        assert catalog.resolve_name("chip", chip), chip
    for system in ["trn1.32xlarge", "trn2.48xlarge", "trn2-ultraserver", "trn2-ultracluster", "inf2.48xlarge",
                   "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "gb200-nvl72", "gb300-nvl72"]:
        assert catalog.resolve_name("system", system), system
    assert catalog.load_system("trn2-ultracluster").max_chips == 100_000


def test_user_file_with_base_overrides_one_field(tmp_path):
    f = tmp_path / "trn2-2xbw.yaml"
    f.write_text("base: trainium2\nmemory_bandwidth: 5.8 TB/s\n")
    chip = catalog.load_chip(str(f))
    assert chip.memory_bandwidth == pytest.approx(5.8e12)
    assert chip.peak_flops == catalog.load_chip("trainium2").peak_flops


def test_unknown_name_suggests_closest():
    with pytest.raises(FlopcastError, match="closest: trainium2"):
        catalog.load_chip("trainum2")


@pytest.mark.parametrize("text, value", [("667 TFLOP/s", 6.67e14), ("96 GiB", 96 * 2**30), ("200 Gbit/s", 25e9),
                                         ("2 us", 2e-6), ("820 GiB/s", 820 * 2**30), ("21.5 USD/h", 21.5)])
def test_units(text, value):
    assert parse(text) == pytest.approx(value)


def test_whole_shipped_catalog_loads_and_passes_the_range_checks():
    """Every chip, system (and its chip) and model loads with the checks user files get; none is refused."""
    for key in catalog.names("chip"):
        chip = catalog.load_chip(key)
        assert chip.memory_bandwidth > 0 and all(p > 0 for p in chip.peak_flops.values()), key
        assert chip.name == catalog.raw("chip")[key].get("name", key)
    for key in catalog.names("system"):
        system = catalog.load_system(key)
        assert system.chips_per_node >= 1 and system.tiers, key
        assert system.price_per_hour is None or system.price_per_hour >= 0, key
        assert catalog.system_for(key) == system
    for key in catalog.names("model"):
        m = catalog.load_model(key)
        assert m.layers >= 1 and m.heads % m.kv_heads == 0 and not m.shape_errors(), key
        assert m.head_dim or m.mla or m.hidden % m.heads == 0, key


def test_every_chip_name_gives_its_default_system():
    for key in catalog.names("chip"):
        default = catalog.raw("chip")[key].get("default_system")
        if default:
            assert catalog.system_for(key).chip.id == key


def test_catalog_shows_every_entry():
    from flopcast.report import catalog as show

    for kind in ("chip", "system", "model"):
        for key in catalog.names(kind):
            e = show.entry_json(key)
            assert e["kind"] == kind and e["id"] == key and e["fields"]


def test_measured_matmul_ceiling_sets_family_priors_and_unfitted_chips():
    from flopcast.model.system import Dtype
    from flopcast.validate import calibrate as cb

    h100, h200 = catalog.load_chip("h100-sxm"), catalog.load_chip("h200")
    assert cb._prior("nvidia-hopper", "gemm") == pytest.approx(
        (h100.mamf_fraction(Dtype.BF16) + h200.mamf_fraction(Dtype.BF16)) / 2)
    assert cb._prior("trainium", "gemm") == cb.FAMILY_PRIOR["gemm"][0]  # no Trainium MAMF published
    assert cb._prior("nvidia-hopper", "attention") == cb.FAMILY_PRIOR_OVERRIDE[("nvidia-hopper", "attention")]

    cal = catalog.calibration()
    mi = catalog.load_chip("mi300x")
    assert mi.family not in cal.families and 0.4 < mi.mamf_fraction(Dtype.BF16) < 0.6
    eff = cal.for_chip(mi)
    assert eff.gemm == pytest.approx(mi.mamf_fraction(Dtype.BF16) * cal.mamf_transfer["gemm"])
    # attention: the fitted families' mean, bounded by the chip's matmul ceiling and its GEMM efficiency
    assert eff.attention == pytest.approx(min(cal.mean_family().attention, mi.mamf_fraction(Dtype.BF16), eff.gemm))
    assert "maximum achievable matmul" in cal.basis(mi)
    from flopcast.cost.efficiency import FAMILY_FALLBACK, bounded

    unfitted = [c for c in map(catalog.load_chip, catalog.raw("chip")) if c.family not in cal.families
                and FAMILY_FALLBACK.get(c.family) not in cal.families and not c.mamf]
    assert unfitted
    for chip in unfitted:  # no MAMF: the fitted families' mean, within the physical bounds
        assert cal.for_chip(chip) == bounded(cal.mean_family(), chip)
    hopper, mean = cal.families["nvidia-hopper"], cal.mamf_family["nvidia-hopper"]
    own = replace(hopper, gemm=hopper.gemm * h100.mamf_fraction(Dtype.BF16) / mean["gemm"],
                  gemm_fp8=hopper.gemm_fp8 * h100.mamf_fraction(Dtype.FP8) / mean["gemm_fp8"])
    assert cal.for_chip(h100) == bounded(own, h100)
    trn2 = catalog.load_chip("trainium2")
    assert cal.for_chip(trn2) == bounded(cal.families["trainium"], trn2)
