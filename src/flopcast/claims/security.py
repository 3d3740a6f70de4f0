"""Claim 7d: Graviton4 encrypts its high-speed physical hardware interfaces: a security property, not a
performance one."""

from __future__ import annotations

from .evidence import ANNOUNCEMENT
from .rows import Estimate


def estimate_encrypted(runs, rows: dict) -> Estimate:
    """7d: what AWS documents, and what flopcast can and cannot say about it (no number)."""
    why = ("AWS documents that Graviton4 encrypts all its high-speed physical hardware interfaces (the DDR5 memory "
           "and the links between sockets) and that the Nitro System isolates instances from the host. That is a "
           "security property: flopcast models time, memory, cost and energy, so it can neither test it nor price "
           "it. No measured cost of the encryption is published, and flopcast's Graviton4 predictions add none "
           "(its memory bandwidth is the catalog's, as measured with the encryption on).")
    return Estimate(
        None,
        ("not a performance figure: no flopcast estimate exists for it",
         "the memory bandwidth flopcast uses for Graviton4 is a STREAM measurement on a running instance, so any "
         "cost of memory encryption is already inside it; none is added or removed"),
        (f"announcement [{ANNOUNCEMENT}]", "AWS Graviton documentation [GRAVITON_GUIDE]"),
        why,
        {"property": "security", "measurable_by_flopcast": False},
    )
