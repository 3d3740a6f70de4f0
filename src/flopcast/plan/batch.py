"""The global batches the capacity planner tries on a cluster: a grid that grows with the cluster, up to the
model's critical batch.

Critical batch (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training"): beyond the gradient
noise scale, a larger batch buys little fewer steps, so more data-parallel replicas stop paying. Its size at
the loss a run reaches follows Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", eq. 5.3),
B_crit(L) = B* / L^(1/alpha_B), B* = 2e8 tokens, alpha_B = 0.21, with L the loss Hoffmann et al. 2022
(Chinchilla, eq. 10: E + A/N^alpha + B/D^beta, E 1.69, A 406.4, B 410.7, alpha 0.34, beta 0.28) predicts for
N parameters trained on D tokens. Checks against published schedules: Llama 3 405B on 15.6T tokens trained
at 16M tokens (Llama 3 paper, sec. 3.4.1), this rule gives 11.6M; DeepSeek-V3 ramped to 15,360 sequences x
4,096 = 61M tokens (DeepSeek-V3 report, sec. 4.2), with 37B active parameters: the rule is a bound of the
order practice uses, not a fitted value. A model's own recorded batch (models.yaml batch_tokens) raises the
cap to it; `max_global_batch` replaces it.
"""

from __future__ import annotations

import math

from ..errors import FlopcastError

KAPLAN_B_STAR_TOKENS = 2e8
KAPLAN_ALPHA_B = 0.21
CHINCHILLA = (1.69, 406.4, 410.7, 0.34, 0.28)  # E, A, B, alpha, beta
STEPS_PER_OCTAVE = 4  # batch sizes tried per doubling: 1, 1.25, 1.5, 1.75 x a power of two


def chinchilla_loss(params: float, tokens: float) -> float:
    e, a, b, alpha, beta = CHINCHILLA
    return e + a / params**alpha + b / tokens**beta


def critical_batch_tokens(params: float, tokens: float) -> float:
    """Kaplan's critical batch (tokens) at the Chinchilla loss of `params` parameters after `tokens` tokens."""
    if params <= 0 or tokens <= 0:
        raise FlopcastError(f"critical batch needs positive parameters and tokens, got {params} and {tokens}")
    return KAPLAN_B_STAR_TOKENS / chinchilla_loss(params, tokens) ** (1 / KAPLAN_ALPHA_B)


def batch_cap(model, tokens: float, max_global_batch: int | None = None) -> tuple[int, str]:
    """(largest global batch in sequences, why): the user's, else the critical batch or the model's recorded one."""
    if max_global_batch is not None:
        if max_global_batch < 1:
            raise FlopcastError(f"`max_global_batch` must be a positive number of sequences, got {max_global_batch}")
        return int(max_global_batch), "given"
    from ..cost.params import active_params

    crit = critical_batch_tokens(active_params(model), tokens)
    recorded = model.batch_tokens or 0.0
    if recorded > crit:
        return max(1, int(recorded / model.seq_len)), f"the model's recorded batch ({recorded / 1e6:.1f}M tokens)"
    return max(1, int(crit / model.seq_len)), (f"the critical batch ({crit / 1e6:.1f}M tokens; McCandlish 2018, "
                                               f"Kaplan 2020 at the Chinchilla loss)")


def batch_grid(model, tokens: float, max_global_batch: int | None = None) -> tuple[tuple[int, ...], int, str]:
    """(global batches to try, the cap, why the cap): STEPS_PER_OCTAVE per doubling from half the customary
    batch up to the cap, so larger clusters find a batch their data-parallel degree divides."""
    cap, why = batch_cap(model, tokens, max_global_batch)
    base = max(1.0, (model.batch_tokens or 4e6) / model.seq_len)
    lo = max(1, min(cap, int(base / 2)))
    out = {cap}
    k = 2 ** int(math.floor(math.log2(lo)))
    while k <= cap:
        for step in range(STEPS_PER_OCTAVE):
            b = int(round(k * (1 + step / STEPS_PER_OCTAVE)))
            if lo <= b <= cap:
                out.add(b)
        k *= 2
    return tuple(sorted(out)), cap, why
