"""sweep: a file of scenarios (models x systems x hardware what-ifs x chips x tokens x pins), one training
forecast each (or, with a `serving:` block, one deployment search each), run on local processes or Ray."""

from __future__ import annotations

from ..plan import deploy as D
from ..plan import forecast
from .args import python_errors
from .deployment import outcome_dict
from .serving import config


def deploy_one(model, system, serve) -> dict:
    """One serving scenario (sweep.serving.Serve) on one system: what `flopcast deploy --json` prints for it."""
    cfg = config(slo_ttft=serve.slo_ttft_s, slo_tpot=serve.slo_tpot_s)
    return outcome_dict(D.deploy(model, system, cfg, input_tokens=serve.input_tokens,
                                 output_tokens=serve.output_tokens, qps=serve.qps, weights=serve.weights,
                                 kv_dtypes=serve.kv_dtype, requests=serve.requests,
                                 disaggregate=serve.disaggregate))


@python_errors
def sweep(file, out=None, *, engine: str = "local", workers: int | None = None, address: str | None = None,
          resume: bool = True, progress=None):
    """Run a sweep file (docs/sweep.md): one `train` forecast per scenario, rows written to `out`
    (.parquet or .csv) as a table; scenarios already in `out` are skipped unless resume=False. A file with a
    `serving:` block runs one `deploy` search per scenario instead (cost per million output tokens at the SLOs).

    engine: "local" (a process pool of `workers`, default the machine's cores) or "ray" (`address` of a
    Ray cluster, or none for a local one). Returns a flopcast.sweep.runner.SweepRun (rows, counts, timing).

    Example (not run here: it starts worker processes):
    ``r = flopcast.api.sweep("examples/codesign.yaml", "codesign.parquet", workers=2); r.counts``
    """
    from ..sweep import runner, spec

    return runner.run_sweep(spec.read(file), resolve_model=forecast.resolve_model, forecast=forecast.train,
                            serve=deploy_one, out=out, engine=engine, workers=workers, address=address,
                            resume=resume, progress=progress)
