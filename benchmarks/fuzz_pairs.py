"""Pairs of runs for the fuzz campaign: one command twice, on a chip and on the same chip with more memory bandwidth
or more peak FLOP/s (a chip file based on it), every other option the same. A faster chip is never slower: step_time_s
of `train`, ttft_s, tpot_s and e2e_latency_s of `infer` do not grow (a one-run check can never see this; the search
picks the best layout over the same candidates, so the best on the faster chip is at least as good)."""

from __future__ import annotations

import json
import random
from pathlib import Path

CHIPS = ["h100-sxm", "trainium2", "tpu7x", "a100-sxm-80gb", "b200", "mi300x", "trainium1", "graviton4"]
FACTORS = [1.0001, 1.1, 1.5, 2.0, 10.0, 1000.0]
METRICS = {"train": ("step_time_s",), "infer": ("ttft_s", "tpot_s", "e2e_latency_s")}
SEPARATOR = "\n=== the faster chip ===\n"
REL = 1e-9


def _scaled(text: str, factor: float) -> str:
    """'3.35 TB/s' x 2 -> '6.7 TB/s' (the number scaled, the unit kept)."""
    number, _, unit = str(text).partition(" ")
    return f"{float(number) * factor!r} {unit}".strip()


def pair(rng: random.Random, names, folder: Path, command_line) -> list | None:
    """[argv on the chip, argv on the faster chip], or None when the chip has nothing to scale;
    `command_line(rng, names, folder, command)` draws the command's options."""
    from flopcast import catalog

    command = rng.choice(sorted(METRICS))
    chips = [c for c in CHIPS if c in names.chips]
    chip = rng.choice(chips)
    raw = catalog.raw("chip")[chip]
    factor = rng.choice(FACTORS)
    field = rng.choice(["memory_bandwidth", "peak_flops", "both"])
    lines = [f"base: {chip}"]
    if field in ("memory_bandwidth", "both") and raw.get("memory_bandwidth"):
        lines.append(f"memory_bandwidth: {_scaled(raw['memory_bandwidth'], factor)}")
    if field in ("peak_flops", "both") and isinstance(raw.get("peak_flops"), dict):
        peaks = {k: _scaled(v, factor) for k, v in raw["peak_flops"].items() if v}
        lines.append("peak_flops: {" + ", ".join(f"{k}: {v}" for k, v in peaks.items()) + "}")
    if len(lines) == 1:
        return None
    (folder / "chip.yaml").write_text(f"base: {chip}\n")
    (folder / "faster.yaml").write_text("\n".join(lines) + "\n")
    argv = command_line(rng, names, folder, command)
    argv = [a for a in argv if a != "--json"] + ["--json"]
    if "-H" in argv:
        argv[argv.index("-H") + 1] = str(folder / "chip.yaml")
    else:
        argv += ["-H", str(folder / "chip.yaml")]
    faster = [str(folder / "faster.yaml") if a == str(folder / "chip.yaml") else a for a in argv]
    return [argv, faster]


def verdict(argv: list, out: str) -> tuple[str, str] | None:
    """('nonsense', why) when the faster chip's run is slower; None otherwise (or when either run was refused)."""
    slow_text, _, fast_text = out.partition(SEPARATOR)
    try:
        slow, fast = json.loads(slow_text), json.loads(fast_text)
    except ValueError:
        return None  # a refusal (its exit code and error line are classified as any run's)
    for key in METRICS.get(argv[0][0], ()):
        a, b = slow.get(key), fast.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > a * (1 + REL):
            return "nonsense", f"{key} {b} on the faster chip > {a} on {slow.get('hardware')} ({argv[1][-2:]})"
    return None
