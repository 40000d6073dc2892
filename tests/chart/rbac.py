"""A small RBAC authorizer over rendered chart objects: may this service account make this API call?

It follows the Kubernetes RBAC rules the chart relies on: a ClusterRole bound by a ClusterRoleBinding
applies everywhere, a Role bound by a RoleBinding only in its namespace; a rule matches when its
apiGroups, resources (``pods/binding`` for a subresource) and verbs contain the call's, and, when the
rule lists resourceNames, the call names one of them (a list, watch or create names nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesim.resources import KINDS

GROUP_OF = {kind.plural: kind.group for kind in KINDS}


@dataclass(frozen=True)
class ApiCall:
    """One request as kubesim logged it."""

    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        return GROUP_OF.get(self.resource, "<unknown to kubesim>")

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        target = "/".join(filter(None, (self.resource, self.name, self.subresource)))
        return f"{self.verb} {self.group or 'core'}:{target}{where}"


def calls_from(request_log) -> set[ApiCall]:
    """The distinct API calls of a kubesim request log; discovery and kubesim's own admin paths are
    left out (every authenticated user may read discovery)."""
    return {ApiCall(record.verb, record.resource, record.subresource, record.namespace, record.name)
            for record in request_log if record.resource not in ("discovery", "kubesim")}


class Authorizer:
    """The rules the rendered objects grant one service account."""

    def __init__(self, objects: list[dict], account: str, namespace: str) -> None:
        subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        roles = {(obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]): obj
                 for obj in objects if obj["kind"] in ("ClusterRole", "Role")}
        self.rules: list[tuple[str | None, dict]] = []  # (namespace or None for cluster-wide, rule)
        for binding in objects:
            if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding") or subject not in binding["subjects"]:
                continue
            scope = binding["metadata"]["namespace"] if binding["kind"] == "RoleBinding" else None
            ref = binding["roleRef"]
            role_namespace = scope if ref["kind"] == "Role" else ""
            role = roles.get((ref["kind"], role_namespace or "", ref["name"]))
            assert role is not None, f"{binding['kind']} {binding['metadata']['name']} refers to a missing role"
            self.rules.extend((scope, rule) for rule in role.get("rules", []))

    def allows(self, call: ApiCall) -> bool:
        resource = f"{call.resource}/{call.subresource}" if call.subresource else call.resource
        for scope, rule in self.rules:
            if scope is not None and scope != call.namespace:
                continue
            if call.group not in rule.get("apiGroups", []) or resource not in rule.get("resources", []):
                continue
            if call.verb not in rule.get("verbs", []):
                continue
            names = rule.get("resourceNames")
            if names and call.name not in names:
                continue
            return True
        return False
