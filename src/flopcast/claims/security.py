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
           "(they model no encryption; the STREAM runs that check the modelled bandwidth ran with it on).")
    return Estimate(
        None,
        ("not a performance figure: no flopcast estimate exists for it",
         "the Graviton4 memory bandwidth is the DDR5 peak (12 channels x DDR5-5600, 537.6 GB/s); the sustained "
         "share flopcast models is fitted on Graviton3 llama.cpp runs, and its Graviton4 / Graviton3 ratio at 64 "
         "cores (1.72x) is a little below the 1.8-2.0x a STREAM run on 16xlarge instances measured "
         "[CLASSMETHOD_STREAM], with the encryption on as on every running instance: no cost of it shows, and "
         "none is added or removed"),
        (f"announcement [{ANNOUNCEMENT}]", "AWS Graviton documentation [GRAVITON_GUIDE]",
         "CLASSMETHOD_STREAM (STREAM on c7g/c8g, 2026-02-21)"),
        why,
        {"property": "security", "measurable_by_flopcast": False},
    )
