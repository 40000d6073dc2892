"""Pod affinity, anti-affinity and topology spread end to end: pods created with the official client in
kubesim, placed by the real core and shim; the cases are kube-scheduler's filter cases, at cluster scale."""

from __future__ import annotations

from collections import Counter

from tests.shim.doubles import wait_for

ZONE = "topology.kubernetes.io/zone"


def zonal_nodes(cluster, zones=("z1", "z2", "z3"), per_zone=2, cpu="4") -> None:
    for zone in zones:
        for index in range(per_zone):
            cluster.node(f"{zone}-n{index}", cpu=cpu, labels={ZONE: zone})


def zone_of(cluster, pod: str) -> str:
    return cluster.node_of(pod).rsplit("-", 1)[0]


def required(kind: str, selector: dict, key: str = ZONE) -> dict:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector,
                                                                         "topologyKey": key}]}}


def test_interpodaffinity_anti_affinity_on_zone_puts_one_pod_per_zone_and_explains_the_rest(cluster):
    zonal_nodes(cluster)
    cluster.start_scheduler()
    repel = required("podAntiAffinity", {"matchLabels": {"app": "etcd"}})
    names = [f"etcd-{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, labels={"app": "etcd"}, affinity=repel)
    wait_for(lambda: sum(cluster.bound(n) for n in names) == 3)
    wait_for(lambda: cluster.events("FailedScheduling"))
    bound = [n for n in names if cluster.bound(n)]
    assert sorted(zone_of(cluster, n) for n in bound) == ["z1", "z2", "z3"]
    (waiting,) = set(names) - set(bound)
    messages = [e.message for e in cluster.events("FailedScheduling", waiting)]
    assert "0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules." in messages
    cluster.assert_consistent()


def test_interpodaffinity_existing_foreign_pods_anti_affinity_protects_its_zone(cluster):
    zonal_nodes(cluster, zones=("z1", "z2"))
    repel = required("podAntiAffinity", {"matchLabels": {"role": "batch"}})
    cluster.pod("foreign-guard", scheduler="default-scheduler", node="z1-n0", labels={"role": "db"}, affinity=repel)
    cluster.start_scheduler()
    names = [f"batch-{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, labels={"role": "batch"})
    cluster.wait_bound(*names)
    assert {zone_of(cluster, n) for n in names} == {"z2"}
    cluster.assert_consistent()


def test_interpodaffinity_affinity_to_zone_follows_the_first_pod_of_the_group(cluster):
    zonal_nodes(cluster)
    cluster.pod("cache", scheduler="default-scheduler", node="z2-n1", labels={"app": "cache"})
    cluster.start_scheduler()
    near = required("podAffinity", {"matchLabels": {"app": "cache"}})
    names = [f"web-{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, labels={"app": "web"}, affinity=near)
    cluster.wait_bound(*names)
    assert {zone_of(cluster, n) for n in names} == {"z2"}
    # A group with affinity to itself starts anywhere, then stays together.
    together = required("podAffinity", {"matchLabels": {"app": "group"}})
    group = [f"group-{i}" for i in range(3)]
    cluster.pod(group[0], labels={"app": "group"}, affinity=together)
    cluster.wait_bound(group[0])
    for name in group[1:]:
        cluster.pod(name, labels={"app": "group"}, affinity=together)
    cluster.wait_bound(*group)
    assert len({zone_of(cluster, n) for n in group}) == 1
    cluster.assert_consistent()


def test_podtopologyspread_do_not_schedule_spreads_across_zones_within_max_skew(cluster):
    zonal_nodes(cluster, per_zone=2)
    cluster.start_scheduler()
    constraint = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "spread"}}}]
    names = [f"spread-{i}" for i in range(9)]
    for name in names:
        cluster.pod(name, labels={"app": "spread"}, topologySpreadConstraints=constraint)
    cluster.wait_bound(*names)
    assert Counter(zone_of(cluster, n) for n in names) == {"z1": 3, "z2": 3, "z3": 3}
    cluster.assert_consistent()


def test_podtopologyspread_missing_domain_label_and_skew_are_explained(cluster):
    cluster.node("z1-n0", cpu="1", labels={ZONE: "z1"})
    cluster.node("z2-n0", cpu="4", labels={ZONE: "z2"})
    cluster.node("plain", cpu="4")
    cluster.start_scheduler()
    constraint = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "s"}}}]
    names = [f"s-{i}" for i in range(4)]  # z1 takes one pod of 800m; z2 may only run one ahead of it: 1/2
    for name in names:
        cluster.pod(name, cpu="800m", labels={"app": "s"}, topologySpreadConstraints=constraint)
    wait_for(lambda: sum(cluster.bound(n) for n in names) == 3 and cluster.events("FailedScheduling"))
    waiting = [n for n in names if not cluster.bound(n)]
    messages = {e.message for n in waiting for e in cluster.events("FailedScheduling", n)}
    assert ("0/3 nodes are available: 1 Insufficient vcore, 1 node(s) didn't match pod topology spread "
            "constraints, 1 node(s) didn't match pod topology spread constraints (missing required label).") in messages
    cluster.assert_consistent()


def test_unenforced_constraints_get_one_warning_event_naming_them(cluster):
    cluster.node("a")
    cluster.start_scheduler()
    cluster.pod("claims", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}],
                volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    cluster.pod("plain")
    cluster.wait_bound("claims", "plain")
    wait_for(lambda: cluster.events("UnenforcedConstraints", "claims"))
    (event,) = cluster.events("UnenforcedConstraints", "claims")
    assert event.type == "Warning"
    assert "ephemeral volumes" in event.message and "resourceClaims" in event.message
    assert not cluster.events("UnenforcedConstraints", "plain")
    from rest.actor_metrics import families
    provide = families(cluster.service.board.unenforced)
    (family,) = [f for f in provide(None) if f.name == "yunikorn_scheduler_unenforced_constraints_total"]
    assert {values[0]: value for _, values, value in family.samples} == {
        "resourceClaims": 1, "ephemeral volumes (their claims are not read)": 1}


def test_preferences_order_nodes_schedule_anyway_spreads_and_preferred_anti_affinity_avoids(cluster):
    zonal_nodes(cluster, per_zone=1, cpu="8")
    cluster.start_scheduler()
    soft = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "soft"}}}]
    names = [f"soft-{i}" for i in range(6)]
    for name in names:  # one at a time: each sees where the previous ones went
        cluster.pod(name, labels={"app": "soft"}, topologySpreadConstraints=soft)
        cluster.wait_bound(name)
    assert Counter(zone_of(cluster, n) for n in names) == {"z1": 2, "z2": 2, "z3": 2}
    avoid = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "soft"}},
                                            "topologyKey": ZONE}}]}}
    cluster.pod("extra-soft", labels={"app": "soft"}, cpu="2")
    cluster.wait_bound("extra-soft")
    crowded = zone_of(cluster, "extra-soft")
    cluster.pod("shy", affinity=avoid)
    cluster.wait_bound("shy")
    assert zone_of(cluster, "shy") != crowded
    assert not cluster.events("UnenforcedConstraints")
    cluster.assert_consistent()


def test_interpodaffinity_namespace_selector_matches_pods_of_labelled_namespaces(cluster):
    zonal_nodes(cluster, zones=("z1", "z2"), per_zone=1)
    for name, team in (("team-x", "x"), ("team-y", "y")):
        cluster.core_api.create_namespace({"metadata": {"name": name, "labels": {"team": team}}})
    cluster.pod("x-db", namespace="team-x", scheduler="default-scheduler", node="z1-n0", labels={"app": "db"})
    cluster.pod("y-db", namespace="team-y", scheduler="default-scheduler", node="z2-n0", labels={"app": "db"})
    cluster.start_scheduler()
    repel_x = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE,
         "namespaceSelector": {"matchLabels": {"team": "x"}}}]}}
    cluster.pod("avoids-x", affinity=repel_x)
    cluster.wait_bound("avoids-x")
    assert zone_of(cluster, "avoids-x") == "z2"
    assert not cluster.events("UnenforcedConstraints")
