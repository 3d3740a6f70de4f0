"""The system: chips, the node they sit in, and the fabric tiers that join them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum


class Dtype(IntEnum):
    """Compute data type. fp8 means FP8 GEMMs with BF16 elsewhere (Trainium: cFP8)."""

    FP32 = 0
    TF32 = 1
    BF16 = 2
    FP16 = 3
    FP8 = 4
    INT8 = 5
    # 4-bit E2M1 elements in blocks of 16 with an E4M3 scale per block and an FP32 scale per tensor
    # (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149, 2025, sec. 2)
    NVFP4 = 6
    # 4-bit E2M1 elements in blocks of 32 with a shared E8M0 (power-of-two) scale (OCP Microscaling Formats
    # (MX) Specification v1.0, 2023, sec. 5)
    MXFP4 = 7

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def quantized(self) -> bool:
        """GEMMs in a narrow format (FP8, INT8, FP4), attention, norms and the rest in BF16."""
        return self in QUANTIZED

    @property
    def gemm_bytes(self) -> float:
        """Bytes per GEMM operand element, the block scales included: NVFP4 4 bits + one 1-byte scale per 16,
        MXFP4 4 bits + one 1-byte scale per 32 (the per-tensor FP32 scale is negligible)."""
        return GEMM_BYTES[self]

    @classmethod
    def parse(cls, text: str) -> Dtype:
        key = text.strip().lower()
        if key == "cfp8":
            key = "fp8"
        try:
            return cls[key.upper()]
        except KeyError:
            valid = ", ".join(d.label for d in cls) + ", cfp8"
            from ..errors import FlopcastError

            raise FlopcastError(f"unknown dtype {text!r}; valid: {valid}") from None


QUANTIZED = frozenset({Dtype.FP8, Dtype.INT8, Dtype.NVFP4, Dtype.MXFP4})
GEMM_BYTES = {Dtype.FP32: 4.0, Dtype.TF32: 4.0, Dtype.BF16: 2.0, Dtype.FP16: 2.0, Dtype.FP8: 1.0, Dtype.INT8: 1.0,
              Dtype.NVFP4: 0.5 + 1 / 16, Dtype.MXFP4: 0.5 + 1 / 32}


class Topology(str, Enum):
    SWITCH = "switch"  # every chip reaches every other at full per-chip bandwidth
    RING = "ring"
    TORUS2D = "torus2d"
    TORUS3D = "torus3d"


@dataclass(frozen=True)
class Tier:
    """One level of the fabric: `size` chips joined at `bandwidth` bytes/s per chip per direction."""

    name: str
    size: int
    topology: Topology
    bandwidth: float  # bytes/s, per chip, per direction, as a collective can use it
    latency: float  # seconds, per hop / per message
    dims: tuple[int, ...] = ()
    scale_out: bool = False  # a network between nodes (EFA, InfiniBand, RoCE, DCN)
    # bytes: a collective whose buffer is smaller runs as a mesh, every rank writing straight to every other, one step
    # whatever the ranks (cost/comm.collective_time); 0: rings and trees at every size
    mesh_below: float = 0.0


@dataclass(frozen=True)
class Chip:
    id: str
    name: str
    kind: str  # accelerator | cpu
    family: str
    peak_flops: dict  # Dtype -> FLOP/s (dense), or None where not published
    memory: float  # bytes
    memory_bandwidth: float  # bytes/s
    sram: float | None = None  # bytes
    power: float | None = None  # watts, published
    power_estimate: float | None = None  # watts, a sourced estimate where no power is published
    tdp: float | None = None  # watts, the rated board power at which peak_flops (and mamf) hold; `power` may be lower
    tile: tuple[int, int] = (128, 128)
    cores: int = 1
    default_system: str = ""
    clock: float | None = None  # Hz (CPUs)
    vector_bits: int = 0
    simd_units: int = 0
    isa: tuple[str, ...] = ()
    memory_channels: int = 0
    # measured maximum achievable matmul FLOP/s per data type (best shape of a brute-force search on one chip,
    # Bekman's mamf-finder), where published: what the chip's GEMM library reaches, not its spec
    mamf: dict = field(default_factory=dict)
    # the dense peaks the chip's entry states beside its mamf (Dtype -> FLOP/s): the fraction of peak measured, which
    # a what-if that changes peak_flops alone leaves as it was (measured_mamf_fraction)
    mamf_peaks: dict = field(default_factory=dict, compare=False, hash=False)
    sources: dict = field(default_factory=dict, compare=False, hash=False)
    notes: dict = field(default_factory=dict, compare=False, hash=False)

    def peak(self, dtype: Dtype) -> float:
        """Dense peak FLOP/s for a compute dtype; fp8 falls back to bf16 where the chip has no FP8 unit."""
        value = self.peak_flops.get(dtype)
        if value is None and dtype == Dtype.FP8:
            value = self.peak_flops.get(Dtype.BF16)
        if value is None and dtype == Dtype.TF32:
            value = self.peak_flops.get(Dtype.FP32)
        if value is None and dtype in (Dtype.FP16, Dtype.BF16):
            value = self.peak_flops.get(Dtype.BF16) or self.peak_flops.get(Dtype.FP16)
        if value is None:
            from ..errors import FlopcastError

            raise FlopcastError(f"chip {self.id} has no published {dtype.label} peak; choose another --dtype")
        return value

    def clock_fraction(self) -> float:
        """Fraction of its rated clock the chip sustains in compute-bound kernels under a board power limit
        (`power`) below its rated power (`tdp`): 1 at or above it. Dynamic CMOS power is P = a C V^2 f; with the
        first-order DVFS assumption that the supply voltage scales with the clock (the alpha-power law's f ~
        (V - Vt)^a / V, Sakurai and Newton 1990, for a near 2 and V well above threshold), P ~ f^3 and
        f / f_rated = (power / tdp)^(1/3). Assumption: a dense-GEMM training workload draws the rated power at the
        clock the peaks and measured ceilings hold at. Deviation: static (leakage) power, which does not scale with
        the clock, is not subtracted (no published figure per part), so this is the smallest clock reduction the
        cap implies; memory-bound kernels are not slowed (HBM keeps its clock)."""
        if not (self.power and self.tdp) or self.power >= self.tdp:
            return 1.0
        return (self.power / self.tdp) ** (1.0 / 3.0)

    def power_notes(self) -> tuple[str, ...]:
        """A forecast's sentence on the clock a power limit below the rating leaves, or none."""
        if self.clock_fraction() == 1.0:
            return ()
        return (f"{self.id} runs at a {self.power:.0f} W power limit of its rated {self.tdp:.0f} W: its compute-bound "
                f"kernels at {self.clock_fraction():.1%} of the rated clock (P ~ f V^2 with V ~ f)",)

    def mamf_fraction(self, dtype: Dtype) -> float | None:
        """Measured maximum achievable matmul FLOP/s as a fraction of the dense peak, or None."""
        value = self.mamf.get(dtype)
        peak = self.peak_flops.get(dtype)
        return value / peak if value and peak else None

    def measured_mamf_fraction(self, dtype: Dtype) -> float | None:
        """The MAMF as a fraction of the peak it was published beside (mamf_peaks; the current peak where none is
        recorded): how close this chip's GEMM library comes to its peak, which a what-if of more peak keeps."""
        value = self.mamf.get(dtype)
        peak = self.mamf_peaks.get(dtype) or self.peak_flops.get(dtype)
        return value / peak if value and peak else None


@dataclass(frozen=True)
class System:
    id: str
    name: str
    chip: Chip
    chips_per_node: int
    tiers: tuple[Tier, ...]
    price_per_hour: float | None = None  # USD per node-hour, on-demand
    capacity_block_price_per_hour: float | None = None  # USD per node-hour, EC2 Capacity Block reservation
    vcpus: int = 0
    host_memory: float | None = None
    memory_bandwidth: float | None = None  # CPU instances: bytes/s for the whole instance
    sources: dict = field(default_factory=dict, compare=False, hash=False)
    notes: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def max_chips(self) -> int:
        return self.tiers[-1].size if self.tiers else self.chips_per_node

    @property
    def tp_domain(self) -> int:
        """Chips one tensor-parallel group may span: one node, or on a TPU slice the whole ICI torus.

        A TPU's hosts hold 4-8 chips but ICI joins every chip of the slice as a 2D/3D torus with no switch
        or NIC between hosts, and TPU frameworks shard a model's tensors over any mesh axis of it (Austin et
        al. 2025, "How to Scale Your Model", sections 3 and 5: collectives run as one ring per torus
        dimension); the collective model (cost/comm.py) already prices a group by the torus dimensions it
        spans. NVLink/NeuronLink domains that equal the node keep tensor parallelism within the node."""
        first = self.tiers[0] if self.tiers else None
        if (first is not None and not first.scale_out and first.topology in (Topology.TORUS2D, Topology.TORUS3D)
                and self.chip.family == "tpu" and first.size > self.chips_per_node):
            return first.size
        return self.chips_per_node

    @property
    def price_per_chip_hour(self) -> float | None:
        return None if self.price_per_hour is None else self.price_per_hour / self.chips_per_node
