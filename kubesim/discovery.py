"""API discovery documents (``/api``, ``/apis``, group versions, ``/version``)."""

from __future__ import annotations

from kubesim.resources import KINDS

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resource_list(group: str, version: str) -> dict | None:
    kinds = [k for k in KINDS if k.group == group and k.version == version]
    if not kinds:
        return None
    resources = []
    for kind in kinds:
        resources.append({"name": kind.plural, "singularName": kind.kind.lower(), "namespaced": kind.namespaced,
                          "kind": kind.kind, "verbs": list(kind.verbs) or _VERBS, "shortNames": list(kind.short_names)})
        for sub in kind.subresources:
            verbs = ["create"] if sub in ("binding", "eviction", "token") else ["get", "patch", "update"]
            sub_kind = {"binding": "Binding", "eviction": "Eviction", "token": "TokenRequest"}.get(sub, kind.kind)
            entry = {"name": f"{kind.plural}/{sub}", "singularName": "", "namespaced": kind.namespaced,
                     "kind": sub_kind, "verbs": verbs}
            if sub == "eviction":  # a policy/v1 Eviction: without these, kubectl drain deletes instead of evicting
                entry.update(group="policy", version="v1")
            elif sub == "token":
                entry.update(group="authentication.k8s.io", version="v1")
            resources.append(entry)
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _groups() -> dict:
    groups = []
    for name in sorted({k.group for k in KINDS if k.group}):
        versions = sorted({k.version for k in KINDS if k.group == name})
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def answer(path: str) -> dict | None:
    """The discovery document at ``path``, or None when the path is not a discovery path."""
    path = path.rstrip("/") or "/"
    if path == "/version":
        return {"major": "1", "minor": "34", "gitVersion": "v1.34.0-kubesim", "gitCommit": "kubesim",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "none",
                "compiler": "python", "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
    if path == "/apis":
        return _groups()
    if path in ("/healthz", "/readyz", "/livez"):
        return {"status": "ok"}
    parts = [p for p in path.split("/") if p]
    if len(parts) == 2 and parts[0] == "api":
        return _resource_list("", parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return _resource_list(parts[1], parts[2])
    return None
