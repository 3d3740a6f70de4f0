"""Serving scenarios in a sweep: the `serving:` block, and one row per scenario from the deployment search.

    serving:
      slo_ttft: [1s, 2s]              # time to first token target; a list sweeps it
      slo_tpot: [50ms, 100ms]         # time per output token target
      input_tokens: 512               # N, uniform:LO:HI or lognormal:MEAN:SIGMA, as `flopcast deploy` reads them
      output_tokens: 128
      qps: [100, 1000]                # optional: a fleet for that request rate (default: one instance at capacity)
      weights: [bf16, fp8]            # optional: the weight formats searched (default: deploy's)
      kv_dtype: [bf16, fp8]           # optional: the KV-cache formats searched
      disaggregate: false             # optional: leave out prefill/decode pools apart (deploy --no-disaggregate)

Each scenario is one `flopcast deploy` search (plan/deploy.py) of the model on the (what-if) system at the
targets: replicas x TP x weight/KV format x max batch, simulated, ranked by cost per million output tokens
(chip-hours per million where the system has no price). At capacity (no `qps`) that ranking is the ranking by
output tokens/s per chip, the instance's price being fixed. The row holds the best deployment and its
capacity at the SLOs (90% of requests within both targets).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..cost import inference as inf
from ..errors import FlopcastError
from ..limits import check
from ..simulate.serving import lengths

# training fields a serving sweep does not take (the deployment search sizes replicas and TP itself)
TRAINING_ONLY = ("chips", "tokens", "tokens_per_param", "seq_len", "layout", "objective")
OBJECTIVE = "cost_at_slo"  # the `objective` column of a serving row
SERVING_STATUS = "misses the SLOs"  # no deployment meets the targets at any rate

Scalar = int | float | str


class ServingBlock(BaseModel):
    """The fields of a sweep file's `serving:` block (docs/sweep.md)."""

    model_config = ConfigDict(extra="forbid")
    slo_ttft: list[Scalar] | Scalar
    slo_tpot: list[Scalar] | Scalar
    input_tokens: list[Scalar] | Scalar = "512"
    output_tokens: list[Scalar] | Scalar = "128"
    qps: list[Scalar] | Scalar | None = None
    weights: list[str] | str | None = None
    kv_dtype: list[str] | str | None = None
    requests: int = Field(default=300, ge=10, le=100_000)
    disaggregate: bool = True


@dataclass(frozen=True)
class Serve:
    """One serving point of the grid: the targets and the workload, in SI; the formats searched."""

    slo_ttft_s: float
    slo_tpot_s: float
    input_tokens: str
    output_tokens: str
    qps: float | None = None
    weights: tuple | None = None
    kv_dtype: tuple | None = None
    requests: int = 300
    disaggregate: bool = True

    @property
    def key(self) -> str:
        """This point's part of a scenario id."""
        formats = ",".join(f"{k}={'+'.join(v)}" for k, v in (("weights", self.weights), ("kv", self.kv_dtype)) if v)
        qps = f",qps={self.qps:g}" if self.qps else ""
        return (f"serve:ttft={self.slo_ttft_s:g}s,tpot={self.slo_tpot_s:g}s,in={self.input_tokens},"
                f"out={self.output_tokens}{qps}{',' + formats if formats else ''},requests={self.requests}"
                f"{'' if self.disaggregate else ',no-disaggregate'}")


def _list(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def _duration(v, name: str) -> float:
    try:
        return float(check(f"{name}_s", v, label=f"serving.{name}"))
    except FlopcastError as exc:
        raise ValueError(f"{exc}; write e.g. 2s or 50ms") from None


def _tokens(v, name: str) -> str:
    text = str(v).strip()
    try:
        drawn = lengths(text, 1, np.random.default_rng(0), f"serving.{name}")
    except FlopcastError as exc:
        raise ValueError(str(exc)) from None
    if text.isdigit() and int(drawn[0]) < 1:
        raise ValueError(f"serving.{name} {v!r} must be at least 1 token")
    return text


def _formats(v, check_one, label: str) -> tuple | None:
    """The format names of a `weights` / `kv_dtype` field, each checked by `check_one` (errors name `label`)."""
    if v is None:
        return None
    names = tuple(n.strip().lower() for n in _list(v))
    if not names:
        raise ValueError("a format list is empty")
    for n in names:
        try:
            check_one(n, label=label)
        except FlopcastError as exc:
            raise ValueError(str(exc)) from None
    return names


def points(block: ServingBlock) -> list[Serve]:
    """Every serving point of the block (the product of its lists), checked."""
    ttft = [_duration(v, "slo_ttft") for v in _list(block.slo_ttft)]
    tpot = [_duration(v, "slo_tpot") for v in _list(block.slo_tpot)]
    ins = [_tokens(v, "input_tokens") for v in _list(block.input_tokens)]
    outs = [_tokens(v, "output_tokens") for v in _list(block.output_tokens)]
    qps = [None] if block.qps is None else [float(check("qps", q, label="serving.qps")) for q in _list(block.qps)]
    if not all((ttft, tpot, ins, outs, qps)):
        raise ValueError("serving: a list is empty")
    w = _formats(block.weights, inf.weight_format, "serving.weights")
    kv = _formats(block.kv_dtype, inf.kv_element_bytes, "serving.kv_dtype")
    return [Serve(a, b, i, o, q, w, kv, block.requests, block.disaggregate)
            for a, b, i, o, q in itertools.product(ttft, tpot, ins, outs, qps)]


def key_columns(serve: Serve) -> dict:
    """A serving scenario's own columns."""
    return {"slo_ttft_s": serve.slo_ttft_s, "slo_tpot_s": serve.slo_tpot_s, "input_tokens": serve.input_tokens,
            "output_tokens": serve.output_tokens, "qps": serve.qps}


# the best deployment's columns, keys as in `flopcast deploy --json` (its `best`), percentiles flattened
BEST_COLUMNS = ("tp", "ep", "weights", "kv_dtype", "max_seqs", "replicas_per_instance", "instances_per_replica",
                "instances", "replica_capacity_qps", "cost_per_million_output_tokens_usd",
                "chip_hours_per_million_output_tokens", "output_tokens_per_s_per_chip", "slo_attainment")
LATENCIES = ("ttft_s", "tpot_s", "e2e_s")


def result_columns(outcome: dict) -> dict:
    """The row of one system's deployment search (api.deployment.outcome_dict)."""
    best = outcome.get("best")
    out = {"hardware": outcome.get("system"), "price_per_hour_usd": outcome.get("price_per_hour_usd"),
           "ranked_by": outcome.get("ranked_by"), "candidates": outcome.get("candidates")}
    if best is None:
        reason = outcome.get("error") or "no deployment meets the SLOs"
        pruned = outcome.get("pruned") or {}
        status = "does not fit" if set(pruned) == {"does not fit"} else SERVING_STATUS
        return {**out, "status": status, "error": reason}
    out.update({"status": "ok", "error": None, "deployment": best.get("label"),
                "served_qps": best.get("qps"), "disaggregated": best.get("disaggregated") is not None})
    out.update({k: best.get(k) for k in BEST_COLUMNS})
    for k in LATENCIES:
        for p in ("p50", "p90", "p99"):
            out[f"{k.removesuffix('_s')}_{p}_s"] = (best.get(k) or {}).get(p)
    out["cost_saving_vs_baseline"] = outcome.get("cost_saving_vs_baseline")
    return out
