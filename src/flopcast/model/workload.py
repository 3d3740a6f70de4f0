"""The workload: a transformer language model's dimensions."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Mlp(str, Enum):
    GELU = "gelu"  # two matrices: h -> f -> h
    SWIGLU = "swiglu"  # three matrices: gate and up h -> f, down f -> h


@dataclass(frozen=True)
class Moe:
    experts: int  # routed experts
    topk: int  # routed experts per token
    expert_ffn: int  # each routed expert's FFN width
    shared_experts: int = 0  # always-on experts, each expert_ffn wide unless shared_ffn
    shared_ffn: int | None = None
    dense_layers: int = 0  # the first N layers use a dense MLP of width ffn_hidden
    layer_freq: int = 1  # every Nth of the remaining layers is MoE


@dataclass(frozen=True)
class Mla:
    """DeepSeek-V2/V3 multi-head latent attention (DeepSeek-AI 2024, arXiv:2405.04434 sec. 2.1)."""

    q_lora_rank: int  # 0: no query compression (DeepSeek-V2-Lite)
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    mlp: Mlp = Mlp.GELU
    head_dim: int = 0  # 0: hidden // heads
    tied_embeddings: bool = False
    dropout: bool = False
    moe: Moe | None = None
    mla: Mla | None = None
    sliding_window: int = 0  # tokens; 0 = full attention everywhere
    sliding_every: int = 0  # every Nth layer is full attention, the others sliding (gpt-oss: 2); 0 or 1: all sliding
    batch_tokens: float = 0.0  # customary global batch in tokens; 0 = unknown
    published_params: float = 0.0
    published_active_params: float = 0.0
    source: str = ""
    id: str = ""
    notes: dict = field(default_factory=dict, compare=False, hash=False)

    def shape_errors(self) -> list[tuple[str, int, str]]:
        """(field, value, what is valid) for each dimension inconsistent with the others; [] if none.

        Attention splits `heads` query heads into groups that share one of `kv_heads` key/value
        heads, so kv_heads must divide heads; without an explicit `head_dim` each head is
        hidden / heads wide (`d_head`), so heads must divide hidden. MLA sets its own head widths.
        """
        out = []
        if self.kv_heads and self.heads % self.kv_heads:
            divisors = [d for d in range(1, self.heads + 1) if self.heads % d == 0]
            shown = ", ".join(map(str, divisors[:12])) + (", ..." if len(divisors) > 12 else "")
            out.append(("kv_heads", self.kv_heads, f"a divisor of heads ({self.heads}): {shown}"))
        if not self.head_dim and not self.mla and self.heads and self.hidden % self.heads:
            lo = self.hidden // self.heads * self.heads
            near = " or ".join(str(v) for v in (lo, lo + self.heads) if v > 0)
            out.append(("hidden", self.hidden, f"a multiple of heads ({self.heads}), e.g. {near}, "
                                               "or set head_dim (then hidden need not divide)"))
        if self.moe:
            if self.moe.topk > self.moe.experts:
                out.append(("moe.topk", self.moe.topk, f"1 to moe.experts ({self.moe.experts})"))
            if self.moe.dense_layers > self.layers:
                out.append(("moe.dense_layers", self.moe.dense_layers, f"0 to layers ({self.layers})"))
        return out

    @property
    def sliding_share(self) -> float:
        """Share of the layers with windowed attention: none without a window; with one, all but every
        `sliding_every`-th layer (gpt-oss alternates, 1/2), or all when sliding_every is 0 or 1 (Mistral 7B)."""
        if not self.sliding_window:
            return 0.0
        return 1.0 - 1.0 / self.sliding_every if self.sliding_every > 1 else 1.0

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        """Width of the query projection (heads x head dim)."""
        if self.mla:
            return self.heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.heads * self.d_head

    @property
    def kv_dim(self) -> int:
        """Width of one of K or V (kv heads x head dim)."""
        if self.mla:
            return self.heads * self.mla.v_head_dim
        return self.kv_heads * self.d_head

    @property
    def attn_out_dim(self) -> int:
        """Input width of the attention output projection."""
        return self.heads * self.mla.v_head_dim if self.mla else self.q_dim

    @property
    def moe_layers(self) -> int:
        if not self.moe:
            return 0
        rest = self.layers - self.moe.dense_layers
        return rest // self.moe.layer_freq

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def label(self) -> str:
        return self.id or self.name
