"""flopcast: forecast what training and serving large language models costs on AI hardware.

`import flopcast` loads nothing heavy: the API functions (flopcast.train, flopcast.plan, ...) are
imported from flopcast.api when first used.

Three names are both a subpackage (the code) and an API function: flopcast.plan, flopcast.validate
and flopcast.claims. Those modules are callable: `flopcast.plan(...)` calls flopcast.api.plan, while
`flopcast.plan.capacity` stays the module it always was.
"""

import importlib
import sys
import types

from .errors import FlopcastError

__version__ = "0.1.0"

_API = ("train", "search", "plan", "compare", "infer", "serve", "deploy", "reliability", "validate", "calibrate", "claims",
        "sweep", "TrainResult")
_SHARED = ("plan", "validate", "claims")  # subpackages whose names are API functions too

__all__ = [*_API, "FlopcastError"]


class _CallableModule(types.ModuleType):
    """A flopcast subpackage named like an API function: calling the module calls the function."""

    def __call__(self, *args, **kwargs):
        api = importlib.import_module(f"{__name__}.api")
        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name, value):
        if name in _SHARED and type(value) is types.ModuleType:
            value.__class__ = _CallableModule  # set as the import system binds the subpackage here
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name in _SHARED:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _API:
        return getattr(importlib.import_module(f"{__name__}.api"), name)
    raise AttributeError(f"module 'flopcast' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
