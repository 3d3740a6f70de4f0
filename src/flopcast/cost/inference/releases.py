"""The Neuron software release an engine runs, and the MoE context-encoding block cost fitted for it.

Neuron's blockwise MoE kernel ships inside the compiler (neuronx-cc) of each Neuron SDK release, so its cost per
block is the release's, not the chip's: at the same layout (Trainium2, TP 4, H 2,048, 128 experts top-8, a
2,048-token context encoding, 159 blocks a layer) Qwen3-30B-A3B under optimum-neuron on SDK 2.26 (neuronx-cc 2.21)
takes 1,547 ms to its first token, Trinity-Mini under NxD Inference on SDK 2.28 (neuronx-cc 2.23) 371 ms
(validation/more_inference_runs.csv di-9 and tm-1). A static-shape engine family's fit therefore carries one
block rate and one cost per DMA transfer per release its MoE rows state (`EngineEfficiency.moe_block_rates` and
`moe_transfer_times`, validate/inference.py; roofline.moe_block_seconds), and a deployment takes those of the
release its engine names (`SDK 2.28` in the engine text). A release without
fitted rows takes the nearest older fitted release's rate, and one older than every fitted release the prior (one
DMA engine's rate, engines.PRIORS): a later release's kernel is no evidence for an earlier one's. An engine that
names none (a user's forecast) takes the newest fitted release's, which is also the family's
`moe_block_bytes_per_s`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .engines import (OVERHEADS_KEY, PER_RELEASE_KEYS, PRIOR_RELEASE_RATES, PRIORS, RATES_KEY, STATIC_SHAPE_FAMILIES,
                      EngineEfficiency, from_yaml, release_key, to_yaml)

__all__ = ["OVERHEADS_KEY", "PER_RELEASE_KEYS", "RATES_KEY", "at_release", "block_rate", "from_yaml", "release_key",
           "release_of", "to_yaml"]

_SDK = re.compile(r"\bSDK\s*v?(\d+)\.(\d+)", re.IGNORECASE)
PER_RELEASE = "moe_block_bytes_per_s@"  # the fit's name of one release's block rate
PER_RELEASE_TRANSFER = "moe_transfer_s@"  # and of its fixed cost per DMA transfer
# a fitted per-release parameter -> (the EngineEfficiency field of its releases, the field a deployment uses)
PER_RELEASE_FIELDS = {PER_RELEASE: (RATES_KEY, "moe_block_bytes_per_s"),
                      PER_RELEASE_TRANSFER: (OVERHEADS_KEY, "moe_transfer_s")}


def release_of(engine: str | None) -> str | None:
    """The Neuron SDK release ('2.28') an engine's text states ('NxD Inference (SDK 2.28)'), or None."""
    m = _SDK.search(engine or "")
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def prior_rate(family: str, release: str) -> float:
    """The prior block rate of a release: that of the newest release at or before it in PRIOR_RELEASE_RATES, else
    the family's (one DMA engine)."""
    stated = [v for r, v in PRIOR_RELEASE_RATES.get(family, ()) if release_key(r) <= release_key(release)]
    return stated[-1] if stated else PRIORS[family].moe_block_bytes_per_s


def block_rate(rates, release: str | None, prior: float) -> tuple[float, str, str]:
    """(bytes/s, the fitted release whose rate it is or 'prior', how it was chosen) for a stated release over
    fitted rates."""
    rates = sorted(rates, key=lambda r: release_key(r[0]))
    newest = rates[-1]
    if release is None:
        return newest[1], newest[0], f"no Neuron SDK release stated: the newest fitted, {newest[0]}"
    exact = [r for r in rates if r[0] == release]
    if exact:
        return exact[0][1], release, f"SDK {release}'s own"
    older = [r for r in rates if release_key(r[0]) < release_key(release)]
    if older:
        rel = older[-1][0]
        return older[-1][1], rel, f"SDK {release} has no fitted MoE row: the nearest older fitted, {rel}"
    return prior, "prior", f"SDK {release} is older than every fitted release ({rates[0][0]} the oldest): the prior"


def with_prior_releases(fitted, priors) -> tuple:
    """Fitted (release, value) pairs, oldest first, and the prior (release, value) pairs of releases without a fitted
    value (engines.PRIORS states the releases from NEURON_SPREAD_RELEASE on, whose kernel spreads its transfers over
    the core's engines): such a release takes its own prior rather than an older release's fit."""
    have = {r for r, _ in fitted}
    return tuple(sorted(list(fitted) + [p for p in priors if p[0] not in have], key=lambda r: release_key(r[0])))


def at_release(eff: EngineEfficiency, engine: str | None, model, family: str) -> tuple[EngineEfficiency, str | None]:
    """eff with the MoE block rate and fixed cost per DMA transfer of the release `engine` states, and a note saying
    which; as it is for dense models, other engine families and a fit without per-release values."""
    if not (model.moe and family in STATIC_SHAPE_FAMILIES and eff.moe_block_rates):
        return eff, None
    release, prior = release_of(engine), PRIORS[family]
    # a stated release without fitted rows may take its own prior; none stated: the newest fitted, as fitted
    unfitted = [p for p in PRIOR_RELEASE_RATES.get(family, ()) if p[0] not in dict(eff.moe_block_rates)] if release \
        else []
    rates = with_prior_releases(eff.moe_block_rates, unfitted)
    rate, used, how = block_rate(rates, release, prior.moe_block_bytes_per_s)
    fixed = eff.moe_transfer_s
    if eff.moe_transfer_times:
        times = with_prior_releases(eff.moe_transfer_times, [(r, prior.moe_transfer_s) for r, _ in unfitted])
        fixed = block_rate(times, release, prior.moe_transfer_s)[0]
    if used in dict(unfitted):
        how += " (no fitted row of it: its prior)"
    note = (f"MoE context-encoding block rate {rate / 1e9:.0f} GB/s a physical core, {fixed * 1e6:.2f} us a DMA "
            f"transfer ({how}; fitted per Neuron SDK release on the Neuron MoE rows, cost/inference/releases.py)")
    return replace(eff, moe_block_bytes_per_s=rate, moe_transfer_s=fixed), note


# transformers-neuronx before SDK 2.19 encodes a context with no fused attention kernel: its Llama and Mistral graphs
# (transformers-neuronx@7a30b42, version 0.10 as in SDK 2.18: llama/hlo.py and mistral/hlo.py call score, mask and
# context_combined of layers/attention.py, or of layers/attention_hsb.py for the BSH layout) take one dot of the
# queries with all the bucket's keys, then a Select with the causal mask, the softmax and one dot with all the values:
# the masked half of the square is computed and thrown away. Neuron SDK 2.19 (07/03/2024) release notes: "Flash
# Attention kernel support in the Transformers NeuronX library enables LLM inference for context lengths of up to 32k"
# (transformers-neuronx@c8d6bdc attention.flash_attention, a causal kernel).
FLASH_CONTEXT_RELEASE = "2.19"


def scores_whole_square(family: str, engine: str | None) -> bool:
    """Whether the engine's context encoding scores every query against every key of the prompt, masking the causal
    half afterwards: transformers-neuronx on a Neuron SDK release before FLASH_CONTEXT_RELEASE that the engine names
    (an engine naming no release is taken as today's, with the fused causal kernel)."""
    release = release_of(engine)
    return (family == "transformers-neuronx" and release is not None
            and release_key(release) < release_key(FLASH_CONTEXT_RELEASE))
