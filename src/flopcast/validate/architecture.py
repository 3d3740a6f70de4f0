"""A training row's model: the catalog entry it names, or one built from its cells with the blanks filled.

Blank architecture cells of a model the catalog lacks come from its closest catalog relative, else from
documented defaults; each filled cell is said (the row's `assumed` list).
"""

from __future__ import annotations

import math
from dataclasses import replace

from .. import catalog
from ..cost.params import total_params
from ..errors import FlopcastError
from ..model.workload import Model
from .rows import ARCH_COLUMNS, _int

_MOE_ARCH = {"moe_shared_experts": "shared_experts", "moe_dense_layers": "dense_layers", "moe_layer_freq": "layer_freq"}


def _catalog_model(row: dict) -> Model | None:
    """The catalog entry named like the row whose dimensions agree with the row's stated ones."""
    name = row["model"].strip().lower()
    key = catalog.resolve_name("model", name)
    candidates = [key] if key else []
    # an alias may be shared by entries of different sources: check every entry naming it
    for k, e in catalog.raw("model").items():
        if name in [str(a).lower() for a in e.get("aliases") or []] and k not in candidates:
            candidates.append(k)
    for k in candidates:
        m = catalog.load_model(k)
        dims = {"layers": m.layers, "hidden": m.hidden, "heads": m.heads}
        if all(_int(row.get(d)) in (None, v) for d, v in dims.items()):
            return m
    return None


# Architecture cells a row may leave blank, and what a model of no catalog relative takes: multi-head attention
# (the row states no grouping); a GeLU MLP of 4h (Vaswani et al. 2017, sec. 3.3) or a SwiGLU MLP of 8h/3 rounded up
# to a multiple of 256 (LLaMA, Touvron et al. 2023, sec. 2.2 and its released code's multiple_of); the LLaMA
# tokenizer's 32,000 entries (Touvron et al. 2023, sec. 2.1), the most common vocabulary of the published runs.
DEFAULT_VOCAB = 32000
DEFAULT_SEQ_LEN = 2048  # GPT-3's context (Brown et al. 2020, sec. 2.1), the catalog's default


def _default_ffn(hidden: int, mlp: str) -> int:
    if mlp == "swiglu":
        return 256 * math.ceil(8 * hidden / 3 / 256)
    return 4 * hidden


def _relative(d: dict, params_b: float | None = None) -> Model | None:
    """The catalog model with the row's hidden width and heads (and MLP kind, if stated) whose layer count is
    closest, and among those the one agreeing with most of the row's stated kv heads, FFN width and vocabulary,
    then the one whose parameter count is closest to the row's `params_b` (Llama 2 7B and Llama 3 8B share 32
    layers of 4096 x 32 heads; a row of 8.0B parameters is the latter): its cells are the best guess for a model
    that shares its dimensions."""
    def rank(m: Model) -> tuple:
        agree = sum(getattr(m, k) == d[k] for k in ("kv_heads", "ffn_hidden", "vocab") if k in d)
        size = abs(math.log(total_params(m) / (params_b * 1e9))) if params_b else 0.0
        return abs(m.layers - d["layers"]), -agree, size

    best = None
    for key in sorted(catalog.raw("model")):
        try:
            m = catalog.load_model(key)
        except FlopcastError:
            continue
        if (m.hidden, m.heads) != (d["hidden"], d["heads"]) or bool(m.moe) != ("moe" in d):
            continue
        if "mlp" in d and m.mlp.value != d["mlp"]:
            continue
        if best is None or rank(m) < rank(best):
            best = m
    return best


def _real(text) -> float | None:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return None


def model_of(row: dict) -> Model:
    return model_and_assumptions(row)[0]


def model_and_assumptions(row: dict) -> tuple[Model, tuple[str, ...]]:
    """The row's model, and a sentence for each architecture cell it did not state and flopcast filled."""
    base = _catalog_model(row)
    d = {}
    for key in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len"):
        v = _int(row.get(key))
        if v is not None:
            d[key] = v
    if row.get("mlp"):
        d["mlp"] = row["mlp"].strip().lower()
    e = _int(row.get("moe_experts"))
    if e:
        d["moe"] = {"experts": e, "topk": _int(row.get("moe_topk")) or 1, "expert_ffn": _int(row.get("moe_expert_ffn"))}
    arch = {k: _int(row.get(k)) for k in ARCH_COLUMNS if _int(row.get(k)) is not None}
    if base is not None:
        upd = {k: v for k, v in d.items() if k not in ("mlp", "moe")}
        if "ffn_hidden" in upd and base.moe and base.moe.dense_layers == 0:
            upd.pop("ffn_hidden")
        if "mtp_layers" in arch:
            upd["mtp_layers"] = arch["mtp_layers"]
        if base.moe and any(k.startswith("moe_") for k in arch):
            upd["moe"] = replace(base.moe, **{f: arch[c] for c, f in _MOE_ARCH.items() if c in arch})
        if "mla_kv_lora_rank" in arch:
            if not base.mla:
                raise FlopcastError(f"mla_kv_lora_rank is set but {base.label} has no multi-head latent attention")
            upd["mla"] = replace(base.mla, kv_lora_rank=arch["mla_kv_lora_rank"])
        blank = [k for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len") if k not in d]
        said = (f"{', '.join(blank)} from the catalog's {base.id}",) if blank else ()
        return replace(base, **upd), said
    if "mla_kv_lora_rank" in arch:
        raise FlopcastError("mla_kv_lora_rank needs a catalog model with MLA (the other latent widths come from it)")
    if "moe" in d:
        d["moe"].update({f: arch[c] for c, f in _MOE_ARCH.items() if c in arch})
    if "mtp_layers" in arch:
        d["mtp_layers"] = arch["mtp_layers"]
    lacking = [k for k in ("layers", "hidden", "heads") if k not in d]
    if lacking:
        raise FlopcastError(f"model {row['model']!r} is not in the catalog and the row lacks {', '.join(lacking)}; "
                            "state them or use a catalog model name (`flopcast catalog` lists them)")
    said = []
    params_b = _real(row.get("params_b"))
    rel = _relative(d, params_b if params_b and params_b > 0 else None)
    for key, default in (("kv_heads", d["heads"]), ("ffn_hidden", _default_ffn(d["hidden"], d.get("mlp", "gelu"))),
                         ("vocab", DEFAULT_VOCAB), ("seq_len", DEFAULT_SEQ_LEN)):
        if key in d or (key == "ffn_hidden" and "moe" in d):
            continue
        if rel is not None:
            d[key] = getattr(rel, key)
            said.append(f"{key} {d[key]} from the catalog's {rel.id} (same hidden and heads)")
        else:
            d[key] = default
            said.append(f"{key} {default} (default: no catalog model has hidden {d['hidden']} and {d['heads']} heads)")
    return catalog.model_from_dict(row["model"], d), tuple(said)
