"""Figures of flopcast's results, drawn with matplotlib (an optional dependency: `flopcast[report]`).

Each builder takes flopcast's own result objects (api.TrainResult, capacity.PlanOutcome,
serving.ServingResult, reliability.Goodput, ...) and returns a `Chart`: a matplotlib Figure
with a stable file name, a title and a caption. Nothing here recomputes a cost; the few
numbers derived for drawing (the pipeline schedule, the roofline counts) say where they come from.

matplotlib is imported inside the functions, never at module import, so flopcast's core and
this module's schedule generator work without it. Figures are `matplotlib.figure.Figure`
objects rendered by the Agg (PNG) and SVG backends: no pyplot, no screen, no global state.

One figure family per module: scaling, breakdowns, pipeline (the schedule generator and its
drawing), pareto, serving, roofline, reliability, compare, claims; bars and common hold what
they share. This face re-exports them, so `from flopcast.report import plots` reads as one module.
"""

from .bars import bar_figure, not_shown, per_system_panels, system_axes
from .breakdowns import breakdown_figure
from .claims import (
    claims_graviton_figure,
    claims_ratio_figure,
    claims_scaling_figure,
    claims_time_to_train_figure,
    figures_claims,
)
from .common import (
    COLORS,
    CYCLE,
    MISSING_MATPLOTLIB,
    PNG_DPI,
    Chart,
    cost_axis,
    log2_chips_axis,
    log_axis,
    matplotlib_figure,
    slug,
    tflops_formatter,
    thousands_formatter,
)
from .compare import compare_figure, figures_compare
from .deploy import deploy_figure
from .pareto import pareto_figure
from .pipeline import (
    SCHEDULES,
    PipelineOp,
    PipelineSchedule,
    StageTimes,
    pipeline_figure,
    pipeline_schedule,
    schedule_order,
    stage_times,
)
from .reliability import goodput_breakdown_figure, goodput_figure
from .roofline import RooflinePoint, roofline_figure, roofline_points
from .scaling import scaling_figure
from .serving import serving_band, serving_compare_figure, serving_figure, serving_sweep

__all__ = [
    "COLORS",
    "CYCLE",
    "Chart",
    "MISSING_MATPLOTLIB",
    "PNG_DPI",
    "PipelineOp",
    "PipelineSchedule",
    "RooflinePoint",
    "SCHEDULES",
    "StageTimes",
    "bar_figure",
    "breakdown_figure",
    "claims_graviton_figure",
    "claims_ratio_figure",
    "claims_scaling_figure",
    "claims_time_to_train_figure",
    "compare_figure",
    "cost_axis",
    "figures_claims",
    "figures_compare",
    "goodput_breakdown_figure",
    "goodput_figure",
    "log2_chips_axis",
    "log_axis",
    "matplotlib_figure",
    "not_shown",
    "pareto_figure",
    "per_system_panels",
    "pipeline_figure",
    "pipeline_schedule",
    "roofline_figure",
    "roofline_points",
    "scaling_figure",
    "schedule_order",
    "serving_compare_figure",
    "serving_band",
    "serving_figure",
    "deploy_figure",
    "serving_sweep",
    "slug",
    "stage_times",
    "system_axes",
    "tflops_formatter",
    "thousands_formatter",
]
