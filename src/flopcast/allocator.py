"""The C allocator's thresholds for a command's large temporary arrays (glibc's malloc, Linux).

A search expands and evaluates candidates in slices of up to 2^19-2^21 layouts: arrays of 0.5-16 MB, allocated and
freed thousands of times. glibc returns the top of its heap to the system whenever more than M_TRIM_THRESHOLD is
free there (by default twice the dynamic mmap threshold: a few MB) and serves a block above M_MMAP_THRESHOLD with
its own mmap, unmapped when freed (glibc manual, "Memory Allocation Tunables"; mallopt(3)), so each slice's arrays
are faulted in page by page again: `plan llama4-scout --budget 400000 -H trn1.32xlarge` spent 7.6 of its 32 s of CPU
in the kernel. Blocks up to 64 MB from the heap, 256 MB of free heap kept before trimming and 64 MB added per
growth: 0.5-1 s in the kernel, the same numbers (an allocator's placement does not change a computed value) and the
same peak resident memory (a block freed is reused before the heap grows). Setting any of these turns off glibc's
dynamic adjustment, so all three are set.
"""

from __future__ import annotations

import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # mallopt parameters (glibc malloc.h)
MMAP_THRESHOLD_BYTES = 64 << 20
TRIM_THRESHOLD_BYTES = 256 << 20
TOP_PAD_BYTES = 64 << 20


def tune() -> bool:
    """Set the thresholds above where the C library is glibc's; whether it took them (False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(k, v) == 1 for k, v in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
                                               (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
                                               (M_TOP_PAD, TOP_PAD_BYTES)))
