"""Speed of the reliability Monte-Carlo: simulated events per second, vectorized and engine paths.

    python benchmarks/reliability_speed.py [--trials 1000] [--chips 100000] [--days 30]

The reference scenario: a 30-day (ideal) job at 100,000 chips with the default assumptions
(Llama 3 interruption rate, so one failure per ~30 min), 1,000 trials.
"""

import argparse
import sys

from flopcast.cost.reliability import GoodputAssumptions, expected_time
from flopcast.simulate.reliability import simulate, simulate_engine
from flopcast.units import DAY


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--chips", type=int, default=100_000)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--engine-trials", type=int, default=50, help="trials for the (slower) event-engine path")
    args = ap.parse_args(argv)
    a = GoodputAssumptions.for_system("trn2.48xlarge", args.chips)
    ideal, ck = args.days * DAY, 300e9 * 14
    g = expected_time(ideal, args.chips, ck, a)
    v = simulate(ideal, args.chips, ck, a, trials=args.trials, seed=0)
    e = simulate_engine(ideal, args.chips, ck, a, trials=args.engine_trials, seed=0)
    print(f"scenario: {args.days:g}-day ideal job, {args.chips:,} chips, checkpoint {ck / 1e12:.1f} TB, "
          f"closed-form goodput {g.goodput:.1%}, {g.interruptions:,.0f} interruptions expected")
    print(f"vectorized: {args.trials} trials, {v.events:,} events in {v.elapsed_s:.2f} s = "
          f"{v.events_per_s:,.0f} events/s; goodput {v.goodput:.1%}")
    print(f"engine    : {args.engine_trials} trials, {e.events:,} events in {e.elapsed_s:.2f} s = "
          f"{e.events_per_s:,.0f} events/s (simulate/events.py, one trial at a time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
