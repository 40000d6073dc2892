"""The hostile-tenant fuzz suite of ``tests/reliability/test_tenant_fuzz.py``, for longer: pods,
namespaces, nodes and configmaps of arbitrary shape and value go to kubesim, each followed by an
ordinary canary pod that must bind, every pod of the scheduler with an outcome and health green. The
first case that breaks this is added to the corpus (``tests/reliability/corpus.json``),
which the test suite replays. Prints the cases run per kind, the API's answers and the time per case.

    python benchmarks/tenant_fuzz.py                     # 500 cases
    python benchmarks/tenant_fuzz.py --cases 5000 --seed 7
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from kubesim import KubeSim  # noqa: E402
from rest.app import SchedulerView  # noqa: E402
from rest.server import RestServer  # noqa: E402
from tests.reliability.invariants import HEALTH_ON_READ  # noqa: E402
from tests.reliability.tenants import OPEN_QUEUES, Case, TenantProbe, hostile_objects, record  # noqa: E402
from tests.shim.cluster import Cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sim = KubeSim(bookmark_interval=0.5).start()
        kubeconfig = Path(scratch) / "kubeconfig"
        sim.write_kubeconfig(str(kubeconfig))
        cluster = Cluster(sim, str(kubeconfig))
        cluster.configure(OPEN_QUEUES, **HEALTH_ON_READ)
        cluster.start_scheduler()
        server = RestServer(SchedulerView(cluster.scheduler, shim_state=cluster.service.latest_state),
                            host="127.0.0.1", port=0)
        probe = TenantProbe(cluster, server.url)
        answers: Counter = Counter()
        failing: list[tuple[Case, BaseException]] = []

        # No shrinking: the cluster keeps what every case left, so the first failure is the one to keep.
        @settings(max_examples=args.cases, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=hostile_objects)
        def fuzz(case: Case) -> None:
            try:
                answers[(case.kind, probe.run(case))] += 1
            except BaseException as error:
                if not failing:
                    failing.append((case, error))
                    traceback.print_exc()
                raise

        if args.seed is not None:
            fuzz = seed(args.seed)(fuzz)
        started = time.monotonic()
        try:
            fuzz()
        except BaseException as error:  # noqa: BLE001 - reported and recorded below
            print(f"FAILED: {type(error).__name__}: {str(error)[:500]}")
        finally:
            elapsed = time.monotonic() - started
            server.stop()
            cluster.close()
            sim.stop()
    run = sum(answers.values())
    print(f"cases run: {run} in {elapsed:.1f} s ({1000 * elapsed / max(run, 1):.0f} ms per case)")
    for kind in sorted({kind for kind, _ in answers}):
        print(f"  {kind:10} " + ", ".join(f"HTTP {status}: {n}" for (k, status), n in sorted(answers.items()) if k == kind))
    if failing:
        case, error = failing[0]
        record(case, f"{type(error).__name__}: {str(error)[:200]} (found by benchmarks/tenant_fuzz.py)")
        print(f"the failing case is added to the corpus: {case.kind}")
        return 1
    print("failures: 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
