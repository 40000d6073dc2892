"""Admission controller goals side by side: keep-alive throughput and reviews beside stalled clients.

Runs ``admission_throughput``'s keep-alive and new-connection measurement and ``admission_slow_clients``'s
four phases on the same controller tree, and prints one table against the goals: at least 8,000
keep-alive ``/mutate`` requests/s with p99 at most 5 ms, and every review on a new connection answered
within 0.2 s beside 200 stalled clients (which connect ``--bursts`` times, 4 by default). With
``--reference REV`` that git revision's controller runs too, alternately with this tree's (``--rounds``
each, the first of a round changing), so both see the same load on a shared machine; the table then
gives medians (the worst review: the worst of all rounds; counts of reviews: summed) and their ratio.
Run: ``python benchmarks/admission_goals.py [--rounds 2 --reference main]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import admission_slow_clients as slow  # noqa: E402
import admission_throughput as throughput  # noqa: E402

RATE_GOAL, P99_GOAL, REVIEW_GOAL = 8000.0, 5.0, 0.2


def run(args, source: Path, label: str) -> dict:
    print(f"--- {label}: throughput")
    kept, fresh = throughput.measure(args, source)
    throughput._print_run("", kept, fresh, args.connections)
    print(f"--- {label}: {args.stalled} stalled clients")
    phases = slow.measure(args, source)
    worst = {name: max(phases[name][0], default=float("inf")) for name in slow.PHASES}
    failures = sum(phases[name][1] for name in slow.PHASES)
    connecting = sorted(phases[slow.PHASES[1]][0])
    return {"keep-alive req/s": kept["rate"], "keep-alive p99 ms": kept["p99"],
            "server CPU us per keep-alive review": kept["server_us"],
            "new connection req/s": fresh["rate"], "server CPU us per new connection": fresh["server_us"],
            **{f"worst review ms, {name}": worst[name] * 1000 for name in slow.PHASES},
            f"p99 review ms, {slow.PHASES[1]}": connecting[int(0.99 * len(connecting))] * 1000,
            f"reviews over {REVIEW_GOAL} s, {slow.PHASES[1]}": sum(t > REVIEW_GOAL for t in connecting),
            f"reviews, {slow.PHASES[1]}": len(connecting),
            "reviews failed beside stalled clients": failures,
            "server CPU s, stalled-clients run": phases["server CPU s"]}


def goal_met(name: str, value: float) -> str:
    if name == "keep-alive req/s":
        return "met" if value >= RATE_GOAL else "NOT met"
    if name == "keep-alive p99 ms":
        return "met" if value <= P99_GOAL else "NOT met"
    if name.startswith("worst review"):
        return "met" if value <= REVIEW_GOAL * 1000 else "NOT met"
    if name.startswith(("reviews failed", "reviews over")):
        return "met" if value == 0 else "NOT met"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="of keep-alive load")
    parser.add_argument("--connections", type=int, default=8, help="keep-alive connections in total")
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--server-key", choices=("ecdsa", "rsa"), default="ecdsa")
    slow.add_arguments(parser)
    parser.set_defaults(threads=16, bursts=4)
    parser.add_argument("--reference", metavar="REV", help="git revision to measure against, alternately")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each")
    args = parser.parse_args()

    trees = [("this tree", REPO)]
    with throughput.checkout(args.reference) as reference:
        if args.reference:
            trees.insert(0, (args.reference, reference))
        runs: dict[str, list[dict]] = {label: [] for label, _ in trees}
        for round_ in range(1, args.rounds + 1):
            for label, source in trees if round_ % 2 else reversed(trees):  # neither always goes first
                runs[label].append(run(args, source, f"round {round_}, {label}"))

    def summary(label: str, name: str) -> float:
        values = [run_[name] for run_ in runs[label]]
        if name.startswith(("reviews over", "reviews failed", "reviews,")):
            return sum(values)
        return max(values) if name.startswith("worst") else statistics.median(values)

    names = list(runs["this tree"][0])
    print(f"\n{args.workers} workers x {args.threads} threads, {args.connections} keep-alive connections, "
          f"{args.stalled} stalled clients connecting {args.bursts} times a round; {args.rounds} round(s), "
          "medians (worst: of all rounds; reviews: summed)")
    columns = [label for label, _ in trees]
    print(f"{'':<48}" + "".join(f"{label:>14}" for label in columns) + ("     ratio" if args.reference else "")
          + "   goal")
    for name in names:
        values = [summary(label, name) for label in columns]
        ratio = f"{values[1] / values[0]:10.2f}" if args.reference and values[0] else ("" if not args.reference
                                                                                       else f"{'':10}")
        print(f"{name:<48}" + "".join(f"{value:14.2f}" for value in values) + ratio
              + f"   {goal_met(name, values[-1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
