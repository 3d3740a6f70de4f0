"""Speculative decoding: a cheap drafter proposes k tokens, the model verifies them in one pass.

Expected tokens per verification pass with acceptance rate alpha (each drafted token accepted with
probability alpha, independently): (1 - alpha^(k+1)) / (1 - alpha) (Leviathan et al. 2023, ICML, eq. 1).
One decode step of b sequences then costs the verification pass over b(k+1) tokens (each query
attends to its sequence's KV once more) plus k drafter steps, and yields that many tokens per sequence,
so its time per output token is (t_verify + k t_draft) / E. Drafter step cost, as a fraction of the
model's own decode step (memory-bound decode: streamed weights):

- draft: a separate small model, `draft_ratio` of the model's parameters (default 0.1: an assumption;
  Leviathan et al. use drafters 10-100x smaller than the target).
- eagle: one decoder layer plus the model's LM head (Li et al. 2024, EAGLE, ICML, sec. 4).
- mtp: one multi-token-prediction module, a transformer block plus the shared head (DeepSeek-V3
  technical report, 2024, sec. 2.2).
- medusa: k extra decoding heads on the last hidden state, run in the model's own pass; each head ends in
  a vocabulary projection (Cai et al. 2024, Medusa, ICML, sec. 2.1).

Default (k, alpha) per method: draft (4, 0.7): Leviathan et al. measure alpha 0.5-0.8 over their model
pairs (Table 3); eagle (4, 0.75): Li et al. report acceptance rates of about 0.7-0.8 per drafted token on
MT-bench; mtp (1, 0.85): DeepSeek-V3 reports "the acceptance rate of the second token prediction ranges
between 85% and 90%" (sec. 5.4.3); medusa (4, 0.6): Cai et al. report top-1 accuracy of about 0.6 for
the first head, falling for later heads (Fig. 3), here one alpha for all.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...errors import FlopcastError


class Method(str, Enum):
    DRAFT = "draft"
    EAGLE = "eagle"
    MEDUSA = "medusa"
    MTP = "mtp"


DEFAULTS = {Method.DRAFT: (4, 0.7), Method.EAGLE: (4, 0.75), Method.MTP: (1, 0.85), Method.MEDUSA: (4, 0.6)}
DEFAULT_DRAFT_RATIO = 0.1


@dataclass(frozen=True)
class Speculation:
    method: Method
    k: int  # tokens drafted per step
    alpha: float  # acceptance rate per drafted token
    draft_ratio: float = DEFAULT_DRAFT_RATIO  # method draft: drafter parameters / model parameters

    @property
    def expected_tokens(self) -> float:
        """Tokens per verification pass: (1 - alpha^(k+1)) / (1 - alpha) (Leviathan et al. 2023, eq. 1)."""
        a, k = self.alpha, self.k
        return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)

    def drafter_fraction(self, model) -> float:
        """One drafter step's cost as a fraction of one decode step of the model (see the module doc)."""
        from .. import params as P

        total = max(P.matmul_params_per_token(model), 1.0)
        head = model.vocab * model.hidden / total
        if self.method == Method.DRAFT:
            return self.draft_ratio
        if self.method == Method.MEDUSA:
            return head
        return 1.0 / model.layers + head  # eagle, mtp: one block plus the LM head

    def label(self) -> str:
        return f"{self.method.value} k={self.k} alpha={self.alpha:g} ({self.expected_tokens:.2f} tokens per pass)"


def speculation(method: str | None, k: int | None = None, alpha: float | None = None,
                draft_ratio: float | None = None) -> Speculation | None:
    """A checked Speculation from the user's choices (None when `method` is None); defaults per method."""
    if method is None:
        if k is not None or alpha is not None:
            raise FlopcastError("`spec_tokens` and `acceptance` need `speculative` (draft, eagle, medusa or mtp)")
        return None
    try:
        m = Method(str(method).strip().lower())
    except ValueError:
        valid = ", ".join(x.value for x in Method)
        raise FlopcastError(f"`speculative` {method!r} is not valid; valid: {valid}") from None
    dk, da = DEFAULTS[m]
    k = dk if k is None else k
    alpha = da if alpha is None else alpha
    if not isinstance(k, int) or k < 1 or k > 16:
        raise FlopcastError(f"`spec_tokens` must be an integer from 1 to 16, got {k}")
    if not 0.0 <= alpha < 1.0:
        raise FlopcastError(f"`acceptance` must be in [0, 1), got {alpha}")
    ratio = DEFAULT_DRAFT_RATIO if draft_ratio is None else draft_ratio
    if not 0.0 < ratio < 1.0:
        raise FlopcastError(f"`draft_ratio` must be in (0, 1), got {ratio}")
    return Speculation(m, k, float(alpha), float(ratio))
