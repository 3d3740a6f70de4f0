"""A candidate of the deployment search (plan/deploy.py): a replica layout, formats and max batch with its
roofline bound, and the constants the search's pruning and capacity runs share with plan/disaggregate.py."""

from __future__ import annotations

from dataclasses import dataclass

MAX_SIMULATIONS = 8
# The roofline bound is a bound on the mean; the simulated capacity (90% of requests within the SLOs) can pass
# it a little (1.02x seen on llama3-8b / p5.48xlarge TP1 fp8), so bounds are widened by this before pruning.
BOUND_SLACK = 1.3
# Capacity runs span this many SLO horizons (TTFT target + O x TPOT target) of arrivals and must be steady
# (_steady). simulate/serving/find_capacity's 4 horizons and whole-run attainment let llama3-8b on one
# Trainium2 at max batch 64 "meet" 12.7 req/s that a run 4x longer shows unstable (14% within the SLOs).
SPAN = 8.0
BACKLOG_GROWTH = 1.2
MAX_UTILISATION = 0.9  # of the burst service rate (see capacity)
MAX_VERIFY_REQUESTS = 60_000


def burst_requests(max_seqs: int) -> int:
    """Requests of the burst that measures a replica's service rate (it never runs dry): 8 x max_seqs, at least
    1,000."""
    return max(8 * max_seqs, 1000)


def span_s(config, n_out: float) -> float:
    """Seconds of arrivals a capacity run spans: SPAN SLO horizons (TTFT target + n_out x TPOT target)."""
    return SPAN * (config.slo_ttft_s + n_out * config.slo_tpot_s)


def run_requests(q: float, config, n_out: float, requests: int) -> float:
    """Requests of a run at `q` req/s over span_s: at least `requests`, at most MAX_VERIFY_REQUESTS."""
    return min(max(requests, q * span_s(config, n_out)), MAX_VERIFY_REQUESTS)


@dataclass(frozen=True)
class Candidate:
    """One way to deploy: a replica layout and formats, with its roofline bound."""

    tp: int
    weights: str
    kv_dtype: str
    max_seqs: int
    replicas_per_instance: int  # replicas on one instance (0 when a replica spans instances)
    instances_per_replica: int  # 1, or the whole instances one replica spans
    bound_qps: float = 0.0  # roofline upper bound on one replica's capacity
    bound_batch: int = 0
    prefill_s: float = 0.0  # roofline seconds of one request's prefill (in a full prefill pass)
    decode_s: float = 0.0  # roofline seconds of one request's decode share (O steps at bound_batch, / bound_batch)
    ep: int = 1  # tp: a MoE model's experts over the replica's chips, attention data-parallel
    pp: int = 1  # pipeline stages of tp chips each

    @property
    def label(self) -> str:
        layout = f"EP{self.ep}" if self.ep > 1 else f"TP{self.tp}" + (f" x PP{self.pp}" if self.pp > 1 else "")
        share = (f"{self.replicas_per_instance} x {layout} per instance" if self.instances_per_replica == 1
                 else f"{layout} over {self.instances_per_replica} instances")
        return f"{share}, weights {self.weights}, KV {self.kv_dtype}, max batch {self.max_seqs}"
