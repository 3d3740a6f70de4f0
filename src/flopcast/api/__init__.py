"""The Python API: one function per command, each returning a frozen result with `to_dict()` (the
command's JSON) and `to_frame()` (a pandas DataFrame; pandas is imported only then).

    import flopcast
    r = flopcast.plan("llama3-70b", hardware="trn2.48xlarge", tokens="15T", deadline="30d")
    r.outcome.chosen.chips, r.to_dict(), r.to_frame()

Arguments take numbers or the strings the command line takes ("15T", "30d", "2s", "50ms"); errors
name the Python argument (`tp=3` must divide ...). docs/api.md lists every function.
"""

from __future__ import annotations

import importlib

# name -> the module of this package that defines it; imported on first use, so that a command loads
# only what it calls (`flopcast search` does not import the serving simulator). No module is named like a
# function: importing a submodule binds its name on this package, which would hide the function.
_WHERE = {
    "train": "training", "search": "training", "plan": "training", "compare": "comparison", "infer": "serving",
    "serve": "serving", "reliability": "goodput", "validate": "validation", "calibrate": "validation",
    "claims": "announcement", "sweep": "sweeps", "deploy": "deployment", "DeployResult": "deployment",
    "SearchResult": "training", "PlanResult": "training", "CompareResult": "training",
    "CompareServingResult": "comparison", "InferResult": "serving", "ServeResult": "serving",
    "ReliabilityResult": "goodput", "ReliabilitySweepResult": "goodput", "ValidationResult": "validation",
    "CalibrationResult": "validation", "ClaimsReport": "announcement", "args": "args",
}
# the training forecast's names, from the layer below
_FORECAST = ("TrainResult", "DEFAULT_MODEL", "DEFAULT_SYSTEM", "DEFAULT_INSTANCES", "MAX_TOKENS", "default_tokens",
             "layout_space", "resolve_model", "resolve_system", "result_from")

# the functions, in the order of the command table (docs/api.md follows it)
FUNCTIONS = ("train", "search", "plan", "compare", "infer", "serve", "deploy", "reliability", "validate", "calibrate",
             "claims",
             "sweep")

__all__ = [*FUNCTIONS, *(k for k in _WHERE if k not in FUNCTIONS and k != "args"), *_FORECAST]


def __getattr__(name: str):
    if name in _FORECAST:
        return getattr(importlib.import_module("flopcast.plan.forecast"), name)
    if name in _WHERE:
        module = importlib.import_module(f"{__name__}.{_WHERE[name]}")
        return module if name == "args" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
