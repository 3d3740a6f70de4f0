"""The Python API: one function per command, each returning a frozen result with `to_dict()` (the
command's JSON) and `to_frame()` (a pandas DataFrame; pandas is imported only then).

    import flopcast
    r = flopcast.plan("llama3-70b", hardware="trn2.48xlarge", tokens="15T", deadline="30d")
    r.outcome.chosen.chips, r.to_dict(), r.to_frame()

Arguments take numbers or the strings the command line takes ("15T", "30d", "2s", "50ms"); errors
name the Python argument (`tp=3` must divide ...). docs/api.md lists every function.
"""

from __future__ import annotations

from ..plan.forecast import (DEFAULT_INSTANCES, DEFAULT_MODEL, DEFAULT_SYSTEM, MAX_TOKENS, TrainResult,
                             default_tokens, layout_space, resolve_model, resolve_system, result_from)
from .claims import ClaimsReport, claims
from .compare import CompareServingResult, compare
from .deploy import DeployResult, deploy
from .reliability import ReliabilityResult, ReliabilitySweepResult, reliability
from .serving import InferResult, ServeResult, infer, serve
from .sweep import sweep
from .training import CompareResult, PlanResult, SearchResult, plan, search, train
from .validation import CalibrationResult, ValidationResult, calibrate, validate

# the functions, in the order of the command table (docs/api.md follows it)
FUNCTIONS = ("train", "search", "plan", "compare", "infer", "serve", "deploy", "reliability", "validate", "calibrate", "claims",
             "sweep")

__all__ = ["train", "search", "plan", "compare", "infer", "serve", "deploy", "reliability", "validate", "calibrate", "claims",
           "sweep",
           "TrainResult", "SearchResult", "PlanResult", "CompareResult", "CompareServingResult",
           "InferResult", "ServeResult", "DeployResult", "ReliabilityResult", "ReliabilitySweepResult", "ValidationResult",
           "CalibrationResult", "ClaimsReport", "DEFAULT_MODEL", "DEFAULT_SYSTEM", "DEFAULT_INSTANCES", "MAX_TOKENS",
           "default_tokens", "layout_space", "resolve_model", "resolve_system", "result_from"]
