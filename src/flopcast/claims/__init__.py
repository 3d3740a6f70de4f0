"""AWS's Trainium2 / Graviton4 announcement claims, tested with flopcast's own models.

The announcement (AWS press release of 2023-11-28, source AWS_TRN2_2023; the figures as
reported by GEEKTOPIA_2023 and WIKICHIP_G4): Trainium2 gives ~4x the training performance
of Trainium1, 2x the performance per watt and 3x the memory (96 GB); 16-chip Trn2
instances scale to EC2 UltraClusters of 100,000 chips, 65 exaflops; a 300-billion-parameter
model trains "in weeks instead of months". Graviton4 is 30% faster than Graviton3, with 50%
more cores and 75% more memory bandwidth.

Each claim is a row of data (table.CLAIMS: id, the claim as announced, the announced figure,
its estimator, its verdict rule) and becomes a `ClaimRow`: the claim, flopcast's estimate, the
assumptions and sources behind it, a verdict and why. The estimators live one announced claim
per module (peak, speedup, memory, scaling, weeks, graviton) and share evidence.py. Every estimate comes from a catalog
entry (entry and field named), a formula (written out), or a flopcast prediction (model,
system, chips and layout named); announced figures appear only as the claim.

Verdict rules (VERDICT_RULES, also printed under the table):
- a claimed quantity or ratio: estimate within +-15% of the claimed value -> consistent;
  the claim above that band -> optimistic; below it -> pessimistic (`verdict`);
- "weeks instead of months": `weeks_verdict` (threshold WEEKS_THRESHOLD_DAYS);
- a figure flopcast cannot compute (a catalog field is missing) -> cannot tell.
"""

from .evidence import ANNOUNCEMENT, GPT300B, TRN1, TRN2, ULTRACLUSTER, WEAK_SEQS_PER_CHIP, Runs, fabric_tiers
from .graviton import EQUAL_CORES, SOCKET, graviton_cases
from .rows import Claim, ClaimRow, ClaimsResult, Estimate
from .rules import TOLERANCE, VERDICT_RULES, VERDICTS, WEEKS_THRESHOLD_DAYS, verdict, weeks_verdict
from .scaling import _sizes  # noqa: F401  (the swept sizes, read by the tests)
from .table import CLAIMS, evaluate

__all__ = [
    "ANNOUNCEMENT", "CLAIMS", "EQUAL_CORES", "GPT300B", "SOCKET", "TOLERANCE", "TRN1", "TRN2", "ULTRACLUSTER",
    "VERDICTS", "VERDICT_RULES", "WEAK_SEQS_PER_CHIP", "WEEKS_THRESHOLD_DAYS", "Claim", "ClaimRow", "ClaimsResult",
    "Estimate", "Runs", "evaluate", "fabric_tiers", "graviton_cases", "verdict", "weeks_verdict",
]
