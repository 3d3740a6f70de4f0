"""The KV-cache hand-off of disaggregated serving: a prefilled prompt's KV cache sent from its prefill replica to a
decode replica over the fabric joining them.

DistServe (Zhong et al. 2024, OSDI, sec. 3.3 and 4.3) and Splitwise (Patel et al. 2024, ISCA, sec. 4.2) run the
prefill and decode phases on separate instances and move each request's KV cache between them once, after its
prefill: the bytes are the prompt's KV cache,

    bytes = prompt tokens x 2 x layers x kv_heads x head_dim x element bytes     (MLA: the compressed latent)

(formats.kv_bytes_per_token; the model's own KV heads, not the tensor-parallel replicas a rank may keep), and the
time is latency + bytes / (lanes x link bandwidth x efficiency). The lanes are the chips that send in parallel:
each of the prefill replica's tensor-parallel ranks holds a shard and sends it on its own link, received by the
decode replica's ranks, so min(prefill ranks, decode ranks) links carry it at once (vLLM's NIXL and Dynamo's
transfer agents move KV blocks rank to rank). The link is the scale-up fabric (NVLink, NeuronLink) when the two
pools share an instance, else the scale-out network (EFA, InfiniBand), with the catalog's per-chip bandwidth and
the calibrated collective efficiency of that tier (model/efficiency.Calibration).

Deviation: Splitwise sends the KV cache layer by layer while the prefill runs, hiding all but about one layer's
transfer; DistServe and vLLM's disaggregated connectors send it after the prefill, as here (TTFT gains the whole
transfer, an upper bound on what a layer-wise sender shows).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from ...model.system import System
from ..comm import tier_bandwidth
from .formats import kv_bytes_per_token
from .replica import Deployment


class Placement(str, Enum):
    """Where a decode replica sits relative to the prefill replica that sends it a request's KV cache."""

    SAME_INSTANCE = "same-instance"  # the scale-up fabric (NVLink, NeuronLink)
    ACROSS_INSTANCES = "across-instances"  # the scale-out network (EFA, InfiniBand)


@dataclass(frozen=True)
class KVLink:
    """The link a KV cache crosses: the tier's name, its bandwidth as a transfer uses it, latency, lanes."""

    tier: str
    bandwidth_bytes_per_s: float  # per lane, per direction, after the tier's efficiency
    latency_s: float
    lanes: int  # chips sending at once (min of the two replicas' ranks)

    def time_s(self, nbytes):
        """Seconds to move `nbytes` (float or numpy array) over the link."""
        return self.latency_s + np.asarray(nbytes, dtype=float) / (self.lanes * self.bandwidth_bytes_per_s)

    def to_dict(self) -> dict:
        return {"tier": self.tier, "bandwidth_gb_per_s": self.bandwidth_bytes_per_s * self.lanes / 1e9,
                "latency_s": self.latency_s, "lanes": self.lanes}


def placement(system: System, prefill_chips: int, decode_chips: int) -> Placement:
    """Both pools in one instance when their chips fit in it, else across instances (the network)."""
    if prefill_chips + decode_chips <= system.chips_per_node and len(system.tiers) > 0:
        return Placement.SAME_INSTANCE
    return Placement.ACROSS_INSTANCES


def kv_link(prefill: Deployment, decode: Deployment, where: Placement) -> KVLink:
    """The link between a prefill and a decode replica of `where`: the first tier of that kind in the catalog."""
    tiers = prefill.system.tiers
    inner = [t for t in tiers if not t.scale_out]
    outer = [t for t in tiers if t.scale_out]
    if where == Placement.SAME_INSTANCE and inner:
        tier = inner[0]
    else:
        tier = (outer or list(tiers))[0]
    lanes = max(1, min(prefill.tp, decode.tp)) if not prefill.is_cpu else 1
    return KVLink(tier.name, tier_bandwidth(tier, prefill.calibration), tier.latency, lanes)


def kv_transfer_bytes(d: Deployment, prompt_tokens):
    """Bytes of a prompt's KV cache in `d`'s KV format (the model's own heads; MLA's compressed latent)."""
    return np.asarray(prompt_tokens, dtype=float) * kv_bytes_per_token(d.model, d.kv_bytes)


def kv_transfer_time(prefill: Deployment, link: KVLink, prompt_tokens):
    """Seconds to hand a prompt's KV cache from its prefill replica to a decode replica over `link`."""
    return link.time_s(kv_transfer_bytes(prefill, prompt_tokens))
