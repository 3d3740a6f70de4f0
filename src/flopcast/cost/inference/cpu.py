"""The CPU threads model: memory bandwidth that `n` threads reach on an instance.

Bandwidth is threads x r, r = weights one thread dequantises per cycle x bytes per weight x clock,
saturating smoothly at the instance's achievable bandwidth: b(n) = nr R / sqrt((nr)^2 + R^2)
(a p=2 soft minimum; it fits the llama.cpp thread sweep of PR 11917 within 6%). A partial
instance gets the bandwidth its system entry states (memory_bandwidth).
"""

from __future__ import annotations

import numpy as np

from ...model.system import System


def cpu_bandwidth(threads, thread_bandwidth, roof):
    """Bytes/s `threads` threads stream: n r R / sqrt((n r)^2 + R^2), monotone, -> R (a p=2 soft min)."""
    nr = np.asarray(threads, dtype=float) * thread_bandwidth
    return nr * roof / np.sqrt(nr * nr + roof * roof)


def instance_bandwidth(system: System, sockets: int) -> float:
    """Memory bandwidth of `sockets` sockets of a CPU instance (a partial instance: its stated share)."""
    if system.memory_bandwidth:
        return system.memory_bandwidth * sockets / system.chips_per_node
    return system.chip.memory_bandwidth * sockets
