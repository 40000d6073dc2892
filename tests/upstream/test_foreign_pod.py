"""Port of upstream's test/e2e/foreign_pod/foreign_pod_test.go (suite: foreign_pod_suite_test.go). The
cluster's kube-system holds kind's pods (see conftest.py), bound by the default scheduler or static."""

from __future__ import annotations

KUBE_SYSTEM = "kube-system"


def test_verify_foreign_pod_tracking(yk):
    """It("Verify foreign pod tracking"): every kube-system pod is a foreign allocation on its node."""
    pods = yk.kube.get_pods(KUBE_SYSTEM).items
    assert pods  # kind's kube-system is never empty
    kube_nodes = {p.metadata.uid: p.spec.node_name for p in pods}
    foreign_nodes = {}
    for node in yk.rest.get_nodes("default"):
        for alloc in node.get("foreignAllocations") or []:
            foreign_nodes[alloc["allocationKey"]] = alloc["nodeId"]
    for uid, node in kube_nodes.items():
        assert uid in foreign_nodes, f"pod {uid} from kube-system is not tracked in Yunikorn"
        assert foreign_nodes[uid] == node, f"pod {uid} is tracked under incorrect node"
