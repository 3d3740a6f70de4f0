"""What a training run costs and draws, with faults: one function (`bill`) every forecast goes through.

Cost = instances x expected wall-clock hours (with failures, checkpoints and restarts, cost/reliability.py)
x the price of an instance-hour. The cluster is held, and paid for, while it waits for a restart and while
it re-does lost work, so the expected time is the billed time; `cost_breakdown_usd` splits it into the
ideal compute and the downtime and re-done work.

Energy = (chip power x chips + host and network power x instances) x expected hours x PUE, with the parts
in `energy_breakdown_kwh`. Power is drawn at the stated rating for the whole expected time: an upper bound
(the chips draw less while a job restarts).

Price: the on-demand rate where one is published; else the EC2 Capacity Block rate, named as such
(`price_kind`). Chip power: the published rating; else a sourced estimate, named as such (`power_basis`).
A price or a power given by the user replaces the catalog's (`price_per_hour=`, `power_w=`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..limits import check
from ..units import HOUR

# Host and network power per accelerator node: the NVIDIA DGX H100/H200 User Guide's maximum system input,
# 10.2 kW (six 3.3 kW supplies, 4+2 redundant; the datasheet's "~10.2 kW max"), with 8 x 700 W GPUs, leaves
# 10.2 - 5.6 = 4.6 kW for CPUs, memory, NICs, switches' share, fans and storage (NVIDIA_DGX_H100_DS, checked
# 2026-12): an upper bound, typical draw under load being 6.5-8.5 kW. Used for every accelerator node of 8-16
# chips (assumption: comparable hosts, e.g. trn2.48xlarge's 192 vCPUs, 2 TiB and 16 EFA NICs against
# p5.48xlarge's 192 vCPUs, 2 TiB and 32 NICs).
HOST_POWER_W_PER_NODE = 10_200.0 - 8 * 700.0
# Power usage effectiveness defaults, by operator (the system id tells the cloud, as cost/reliability.storage_for):
PUE_AWS = 1.15  # AWS global PUE 2024, Amazon sustainability data-center page (AWS_PUE_2024)
# Google fleet-wide trailing twelve-month PUE 2024, Google 2025 Environmental Report (GOOGLE_PUE_2024)
PUE_GOOGLE = 1.09
PUE_INDUSTRY = 1.56  # Uptime Institute Global Data Center Survey 2024, industry average (UPTIME_PUE_2024)


def default_pue(system) -> tuple[float, str]:
    """(PUE, its source) for the operator the system id names."""
    sid = system.id
    if sid.startswith("tpu"):
        return PUE_GOOGLE, "GOOGLE_PUE_2024"
    if sid.startswith(("trn", "inf", "p4", "p5", "p6", "g5", "g6")) or "." in sid:
        return PUE_AWS, "AWS_PUE_2024"
    return PUE_INDUSTRY, "UPTIME_PUE_2024"


@dataclass(frozen=True)
class Rates:
    """What one node-hour costs and draws."""

    price_per_hour_usd: float | None
    price_kind: str  # on-demand | capacity-block | user | none
    chip_power_w: float | None
    power_basis: str  # published | estimate | user | none
    host_power_w: float  # per node
    pue: float
    pue_source: str


def _first(*choices) -> tuple:
    """(value, its kind) of the first choice that is known, else (None, "none")."""
    return next(((float(v), k) for v, k in choices if v is not None), (None, "none"))


def rates_for(system, price_per_hour: float | None = None, power_w: float | None = None,
              pue: float | None = None) -> Rates:
    """The price and power of a node of `system`; the user's values win over the catalog's."""
    price_per_hour, power_w, pue = (check(k, v) for k, v in (("price_per_hour", price_per_hour),
                                                             ("power_w", power_w), ("pue", pue)))  # limits.py
    price, kind = _first((price_per_hour, "user"), (system.price_per_hour, "on-demand"),
                         (system.capacity_block_price_per_hour, "capacity-block"))
    chip = system.chip
    chip_w, basis = _first((power_w, "user"), (chip.power, "published"), (chip.power_estimate, "estimate"))
    host_w = HOST_POWER_W_PER_NODE if system.chip.kind == "accelerator" else 0.0
    p, src = (float(pue), "user") if pue is not None else default_pue(system)
    return Rates(price, kind, chip_w, basis, host_w, p, src)


@dataclass(frozen=True)
class Bill:
    cost_usd: float | None
    cost_breakdown_usd: dict  # compute, downtime_and_rework
    energy_kwh: float | None
    energy_breakdown_kwh: dict  # chips, host_and_network, cooling_and_facility
    rates: Rates

    def to_dict(self) -> dict:
        r = self.rates
        return {"cost_usd": self.cost_usd, "cost_breakdown_usd": dict(self.cost_breakdown_usd),
                "energy_kwh": self.energy_kwh, "energy_breakdown_kwh": dict(self.energy_breakdown_kwh),
                "price_per_hour_usd": r.price_per_hour_usd, "price_kind": r.price_kind,
                "chip_power_w": r.chip_power_w, "power_basis": r.power_basis,
                "host_power_w_per_node": r.host_power_w, "pue": r.pue,
                "pue_source": r.pue_source}


def bill(chips: int, instances: int, ideal_s: float, expected_s: float, rates: Rates) -> Bill:
    """Cost and energy of holding `instances` nodes (`chips` chips) for the expected time of a run; both None
    for a run that never finishes (an infinite expected time)."""
    ideal_h, held_h = ideal_s / HOUR, max(expected_s, ideal_s) / HOUR
    if not math.isfinite(held_h):
        return Bill(None, {}, None, {}, rates)
    if rates.price_per_hour_usd is None:
        cost, parts = None, {}
    else:
        compute = instances * ideal_h * rates.price_per_hour_usd
        cost = instances * held_h * rates.price_per_hour_usd
        parts = {"compute": compute, "downtime_and_rework": cost - compute}
    if rates.chip_power_w is None:
        return Bill(cost, parts, None, {}, rates)
    chip_kwh = chips * rates.chip_power_w * held_h / 1e3
    host_kwh = instances * rates.host_power_w * held_h / 1e3
    facility = (chip_kwh + host_kwh) * (rates.pue - 1.0)
    e_parts = {"chips": chip_kwh, "host_and_network": host_kwh, "cooling_and_facility": facility}
    return Bill(cost, parts, chip_kwh + host_kwh + facility, e_parts, rates)
