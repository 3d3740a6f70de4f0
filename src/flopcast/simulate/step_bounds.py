"""Pieces of a training step that bound it from below, for the planner's branch and bound (plan/bounds.py):
each composes simulate/training.py's own steps, so a change to the step's formulas moves its bound with it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.efficiency import Calibration
from ..model.strategy import MODERN_SOFTWARE, LayoutBatch, Software
from ..model.system import System
from ..model.workload import Model
from .training import _context, _dp_parts, _edges, _layer_kinds, _layer_time, _stage_params


def microbatch_work_s(model: Model, system: System, lb: LayoutBatch, cal: Calibration,
                      software: Software = MODERN_SOFTWARE) -> dict:
    """Seconds of one micro-batch in every layer and both edges, per layout; it reads LAYER_FIELDS and the
    recomputation only. Three arrays, each a piece of `evaluate`'s step the planner bounds it with
    (plan/bounded.py):

    - "work": forward, backward, recomputation and exposed tensor- and context-parallel communication of every
      layer and both edges, W. `evaluate`'s step is m W / pp (compute, recompute, comm/tp, comm/cp) plus
      comm/ep, the imbalance (t_max >= t_avg), the bubble ((pp - 1) / v t_max for 1F1B and interleaved),
      pipeline and data-parallel communication, optimizer and overhead, none negative; the multi-token-
      prediction modules' all-to-all is left out (the share a schedule hides depends on it).
    - "compute": L (fwd + bwd + rec), the compute window a stage's data-parallel collectives hide behind is
      stage layers / L of it.
    - "a2a": L x the layer's all-to-all (`_layer_time`'s a2a): comm/ep is m / pp of it in full, and under an
      overlapping schedule at least (1 - paired share / overlap_compute_factor) of it (`overlapped_stage_time`
      hides at most a2a / slowdown of it behind the compute)."""
    c = _context(model, system, lb, cal, software, True)
    kinds = _layer_kinds(c)
    t_embed, t_logits = _edges(c, kinds, ep_exposed=False)
    lt = _layer_time(c, kinds)
    L = model.layers
    return {"work": L * (lt["fwd"] + lt["bwd"] + lt["rec"] + lt["tp"] + lt["cp"]) + t_embed + t_logits,
            "compute": L * (lt["fwd"] + lt["bwd"] + lt["rec"]),
            "a2a": np.broadcast_to(L * lt["a2a"], c.x["T"].shape)}


def dp_comm_floor_s(model: Model, system: System, lb: LayoutBatch, cal: Calibration, window_s,
                    software: Software = MODERN_SOFTWARE) -> np.ndarray:
    """`evaluate`'s comm/dp of every layout in lb with its compute window (stage layers x (fwd + bwd + rec),
    the time the collectives hide behind) taken as window_s: one per layout, or rows of them (windows x
    layouts, each row's answer). It does not grow with the window, and grows with the parameters a stage holds:
    at an upper bound of the window and the fewest stage layers any choice of virtual stages gives
    (ceil(L / (pp v)) v >= ceil(L / pp): lb with vp 1 and 1F1B), a lower bound."""
    # the layer times are not computed here, so no grouping by LAYER_FIELDS; the collectives still are grouped
    c = replace(_context(model, system, lb, cal, software, False), dedupe=True)
    L, pp, v = model.layers, c.f["pp"], c.v
    stage_layers = np.where(v > 1, np.ceil(L / (pp * v)) * v, np.ceil(L / pp))
    dense_params, expert_params, layer_dense = _stage_params(c, stage_layers)
    per_layer = np.asarray(window_s, dtype=float) / stage_layers
    lt = {"fwd": per_layer, "bwd": 0.0, "rec": 0.0}
    out = _dp_parts(c, lt, stage_layers, dense_params, expert_params, layer_dense)["comm/dp"]
    return np.broadcast_to(out, np.broadcast(per_layer, stage_layers).shape)
