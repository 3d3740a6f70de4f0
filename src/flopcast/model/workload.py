"""The workload: a transformer language model's dimensions."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Mlp(str, Enum):
    GELU = "gelu"  # two matrices: h -> f -> h
    SWIGLU = "swiglu"  # three matrices: gate and up h -> f, down f -> h


@dataclass(frozen=True)
class Moe:
    """A mixture-of-experts MLP and where it sits.

    Names follow the Hugging Face configs they map from (DeepSeek-V3, Qwen3-MoE, Llama 4, gpt-oss):
    experts = n_routed_experts / num_experts / num_local_experts, topk = num_experts_per_tok,
    expert_ffn = moe_intermediate_size (Llama 4: intermediate_size), shared_experts = n_shared_experts
    (Llama 4: 1), dense_layers = first_k_dense_replace, layer_freq = moe_layer_freq /
    interleave_moe_layer_step (Llama 4 Maverick: 2, every second layer MoE), groups = n_group and
    topk_groups = topk_group (DeepSeek-V3's group-limited routing: 8 groups, each token to experts in at
    most 4; with one group per node this is node-limited routing, at most topk_groups nodes per token,
    DeepSeek-V3 report sec. 2.1.2 and 3.2.2).

    capacity_factor: None is dropless dispatch (every routed token is computed; the busiest expert-parallel
    rank receives `imbalance` times the mean); a number is capacity-limited dispatch (GShard, Lepikhin et al.
    2020 sec. 2.2; Switch Transformer, Fedus et al. 2021 sec. 2.2): each expert's buffer holds
    capacity_factor x the mean tokens, padded to it, the overflow dropped, so every rank computes and
    exchanges capacity_factor x the mean.
    imbalance: the busiest rank's routed tokens over the mean under dropless dispatch. Default 1.0, the
    balanced routing of auxiliary-loss-free balancing (DeepSeek-V3 sec. 2.1.2) and of the Megatron-Bridge
    benchmarks, which force-balance the router (docs/performance-summary.md); set a measured value otherwise.
    """

    experts: int  # routed experts
    topk: int  # routed experts per token
    expert_ffn: int  # each routed expert's FFN width
    shared_experts: int = 0  # always-on experts, each expert_ffn wide unless shared_ffn
    shared_ffn: int | None = None
    dense_layers: int = 0  # the first N layers use a dense MLP of width ffn_hidden
    layer_freq: int = 1  # every Nth of the remaining layers is MoE
    groups: int = 0  # expert groups of the group-limited router (0: no limit)
    topk_groups: int = 0  # groups a token's experts may come from (0: any)
    capacity_factor: float | None = None  # None: dropless
    imbalance: float = 1.0  # busiest rank's tokens / mean, dropless

    @property
    def load_factor(self) -> float:
        """Tokens the busiest expert-parallel rank computes and receives, over the balanced mean."""
        return self.capacity_factor if self.capacity_factor is not None else self.imbalance


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
    """A decoder-only transformer. Fields map from a Hugging Face config.json as: layers = num_hidden_layers,
    hidden = hidden_size, heads = num_attention_heads, kv_heads = num_key_value_heads, head_dim = head_dim,
    ffn_hidden = intermediate_size (the dense layers' MLP; Llama 4: intermediate_size_mlp), vocab = vocab_size,
    tied_embeddings = tie_word_embeddings, sliding_window = sliding_window, mtp_layers =
    num_nextn_predict_layers; `moe` and `mla` (see their docstrings) keep the HF names' meaning."""

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
    # multi-token-prediction modules (HF num_nextn_predict_layers; DeepSeek-V3 sec. 2.2: 1), each one more
    # transformer block (an MoE block when the model has experts) after a 2h -> h projection of the
    # normed hidden state and the next token's embedding, sharing the embedding and output head
    mtp_layers: int = 0
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
            g = self.moe.groups
            if g and self.moe.experts % g:
                out.append(("moe.groups", g, f"a divisor of moe.experts ({self.moe.experts})"))
            if self.moe.topk_groups > max(g, 0) or (self.moe.topk_groups and not g):
                out.append(("moe.topk_groups", self.moe.topk_groups, f"1 to moe.groups ({g}), with moe.groups set"))
            cf = self.moe.capacity_factor
            if cf is not None and not cf > 0:
                out.append(("moe.capacity_factor", cf, "a number > 0 (e.g. 1.25), or left out for dropless"))
            if not self.moe.imbalance >= 1.0:
                out.append(("moe.imbalance", self.moe.imbalance, "a number >= 1 (busiest rank's tokens / mean)"))
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
