"""Launch configurations out: the arguments or YAML that start a forecast's layout in a framework.

One module per framework family; each emitter takes what a training forecast chose (model, system,
layout, tokens) and returns a Launch: the text to run, and the layout or model fields the framework
has no setting for, said instead of dropped. The names each emitter writes were checked against the
framework's own source (cited in its module; tests compare them with lists taken from those files).

Serving emitters (an inference engine's launch command from a Deployment) register in SERVING the
same way, as "module:function" taking a Deployment.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

from ..errors import FlopcastError

# framework -> "module:function" of this package, imported when asked for (a framework's module imports no other)
TRAINING = {
    "megatron": "megatron:megatron_lm",
    "nemo": "megatron:megatron_bridge",
    "neuron": "neuron:nxd_training",
    "maxtext": "maxtext:maxtext",
}
GRAPHED = ("megatron", "nemo")  # the emitters that take the CUDA-graph capture and the dispatcher
SERVING: dict[str, str] = {"vllm": "engines:vllm_serve", "llama.cpp": "engines:llama_server"}
# chip families (by prefix) each training framework runs on: Megatron-LM on NVIDIA and (ROCm/Megatron-LM) AMD
# GPUs, Megatron-Bridge on NVIDIA GPUs, NxD Training on Trainium, MaxText on TPUs and NVIDIA/AMD GPUs
RUNS_ON = {"megatron": ("nvidia", "amd"), "nemo": ("nvidia",), "neuron": ("trainium",),
           "maxtext": ("tpu", "nvidia", "amd")}


@dataclass(frozen=True)
class Launch:
    framework: str  # a key of TRAINING or SERVING
    title: str  # what the text starts, e.g. "Megatron-LM pretrain_gpt.py"
    text: str  # the command line or YAML, without comments
    no_equivalent: tuple[str, ...] = ()  # one line per field the framework cannot express, and what is emitted instead
    assumed: tuple[str, ...] = ()  # settings emitted that flopcast's model does not hold (stated, not hidden)
    source: str = ""  # the framework source the names were checked against
    warnings: tuple[str, ...] = ()  # what the forecast says about running it (e.g. it does not fit in memory)

    def render(self) -> str:
        """The text with `#` comment lines (valid in a shell script and in YAML) saying what it starts and lacks."""
        head = [f"# {self.title}", f"# names checked against {self.source}"]
        head += [f"# warning: {w}" for w in self.warnings]
        tail = [f"# assumed: {a}" for a in self.assumed] + [f"# no equivalent: {n}" for n in self.no_equivalent]
        return "\n".join(head + [self.text.rstrip()] + tail) + "\n"

    def to_dict(self) -> dict:
        return {"framework": self.framework, "title": self.title, "text": self.text,
                "no_equivalent": list(self.no_equivalent), "assumed": list(self.assumed), "source": self.source,
                "warnings": list(self.warnings)}


def frameworks() -> tuple[str, ...]:
    return tuple(TRAINING)


def _function(table: dict, framework: str, kind: str):
    if framework not in table:
        valid = ", ".join(table) or "none yet"
        raise FlopcastError(f"unknown {kind} framework {framework!r}; valid: {valid}")
    module, name = table[framework].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def runs_on(framework: str, chip) -> bool:
    return chip.family.startswith(RUNS_ON.get(framework, ()))


def training(framework: str, model, system, layout, tokens: float | None = None, graphs=None,
             dispatcher=None) -> Launch:
    """The launch configuration of a training layout in `framework` (one of TRAINING) on `system`'s chips.

    graphs: the model.strategy.CudaGraphs capture the forecast assumed, for the GPU frameworks that choose it
    (Megatron-LM, Megatron-Bridge); None is eager. The XLA and Neuron stacks compile the step whatever it says.
    dispatcher: the model.strategy.Dispatcher the forecast assumed (None: the all-to-all one), for the same two."""
    emitter = _function(TRAINING, framework, "training")
    if not runs_on(framework, system.chip):
        valid = ", ".join(f for f in TRAINING if runs_on(f, system.chip)) or "none"
        raise FlopcastError(f"framework {framework!r} runs on {' and '.join(RUNS_ON[framework])} chips, not "
                            f"{system.chip.id} ({system.chip.family}); valid for {system.id}: {valid}")
    if framework in GRAPHED:
        runtime = {k: v for k, v in (("graphs", graphs), ("dispatcher", dispatcher)) if v is not None}
        return emitter(model, system, layout, tokens, **runtime)
    return emitter(model, system, layout, tokens)


def serving(framework: str, deployment) -> Launch:
    """The launch command of a serving deployment in `framework` (one of SERVING)."""
    return _function(SERVING, framework, "serving")(deployment)


# ---------------------------------------------------------------- helpers the emitters share

def train_iters(model, layout, tokens: float | None) -> int | None:
    """Optimizer steps that consume `tokens` at the layout's global batch, or None without tokens."""
    if not tokens:
        return None
    return math.ceil(tokens / (layout.global_batch * model.seq_len))


def nodes(system, layout) -> tuple[int, int]:
    """(nodes, chips per node) the layout's chips fill; a layout smaller than a node uses part of one."""
    per_node = system.chips_per_node
    if layout.chips <= per_node:
        return 1, layout.chips
    return math.ceil(layout.chips / per_node), per_node


def moe_pattern(model) -> str | None:
    """A Python list expression of which layers are MoE (1) or dense (0), as Megatron's --moe-layer-freq takes;
    None when every layer is MoE. Leading dense layers first, then every layer_freq-th of the rest
    (the count Model.moe_layers gives)."""
    moe = model.moe
    if not moe or (moe.dense_layers == 0 and moe.layer_freq == 1):
        return None
    rest = model.layers - moe.dense_layers
    freq = moe.layer_freq
    body = f"[1]*{rest}" if freq == 1 else f"([0]*{freq - 1}+[1])*{rest // freq}" + (
        f"+[0]*{rest % freq}" if rest % freq else "")
    return f"([0]*{moe.dense_layers}+{body})" if moe.dense_layers else f"({body})"


def moe_layer_list(model) -> list[int]:
    """1 for each MoE layer, 0 for each dense one, in order: what moe_pattern's expression evaluates to."""
    moe = model.moe
    if not moe:
        return [0] * model.layers
    rest = model.layers - moe.dense_layers
    return [0] * moe.dense_layers + [int((i + 1) % moe.layer_freq == 0) for i in range(rest)]


def shared_ffn(model) -> int:
    """Total width of the always-on shared experts of one MoE layer (0 without)."""
    moe = model.moe
    return (moe.shared_ffn or moe.shared_experts * moe.expert_ffn) if moe else 0
