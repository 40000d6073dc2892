"""kube-apiserver's RBAC authoriser over the stored Roles, ClusterRoles and their bindings.

A request is allowed when a rule of a role bound to its user (by name, by one of its groups, or as a
service account) names its verb, API group, resource (``pods/status`` for a subresource, ``*`` for any)
and, where the rule lists resource names, its object's name. A RoleBinding grants in its own namespace;
a ClusterRoleBinding everywhere. ``system:masters`` is always allowed, as kube-apiserver's
privileged-group authoriser allows it; so are non-resource paths (discovery, OpenAPI, /version,
/healthz) for any user, as the default ``system:discovery`` and ``system:public-info-viewer`` roles
grant them, and asking what one may do (a SelfSubjectAccessReview, ``kubectl auth can-i``), as
``system:basic-user`` grants it. Aggregated ClusterRoles are not played.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kubesim import errors
from kubesim.resources import BY_PLURAL
from kubesim.store import Store

GROUP = "rbac.authorization.k8s.io"
ROLE, CLUSTER_ROLE = BY_PLURAL["roles"], BY_PLURAL["clusterroles"]
ROLE_BINDING, CLUSTER_ROLE_BINDING = BY_PLURAL["rolebindings"], BY_PLURAL["clusterrolebindings"]
SELF_REVIEW = BY_PLURAL["selfsubjectaccessreviews"]
MASTERS = "system:masters"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a resource request asks to do (kube-apiserver's authorizer.Attributes)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    def forbidden(self, user) -> errors.ApiError:
        """kube-apiserver's 403 for ``user`` (responsewriters.Forbidden and NewForbidden)."""
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        scope = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        why = f'User "{user.name}" cannot {self.verb} resource "{resource}" in API group "{self.group}" {scope}'
        qualified = f"{self.resource}.{self.group}" if self.group else self.resource
        what = f'{qualified} "{self.name}"' if self.name else qualified
        details = {"name": self.name, "group": self.group, "kind": self.resource}
        return errors.ApiError(403, "Forbidden", f"{what} is forbidden: {why}",
                               {k: v for k, v in details.items() if v})


class Rbac:
    def __init__(self, store: Store) -> None:
        self._store = store

    def allows(self, user, attributes: Attributes | None) -> bool:
        """Whether ``user`` may do it (``attributes`` None: a non-resource path)."""
        if MASTERS in user.groups or attributes is None or (attributes.resource == SELF_REVIEW.plural
                                                             and attributes.group == SELF_REVIEW.group):
            return True
        with self._store.lock:
            bindings = [(b, "") for b in self._store.list(CLUSTER_ROLE_BINDING)[0]]
            if attributes.namespace:
                bindings += [(b, attributes.namespace) for b in self._store.list(ROLE_BINDING, attributes.namespace)[0]]
            for binding, namespace in bindings:
                if not any(_names(subject, user) for subject in _dicts(binding.get("subjects"))):
                    continue
                ref = binding.get("roleRef") if isinstance(binding.get("roleRef"), dict) else {}
                role_kind = (CLUSTER_ROLE if ref.get("kind") == "ClusterRole"
                             else ROLE if ref.get("kind") == "Role" and namespace else None)
                role = self._store.find(role_kind, namespace if role_kind is ROLE else "", ref["name"]) \
                    if role_kind is not None and isinstance(ref.get("name"), str) else None
                if role is not None and any(_grants(rule, attributes) for rule in _dicts(role.get("rules"))):
                    return True
        return False


def self_review(body, user, allows) -> dict:
    """The answer to a SelfSubjectAccessReview: whether ``user`` may do what its spec describes (``allows``:
    the authoriser in force). Without a namespace, a namespaced resource is asked of every namespace."""
    spec = (body or {}).get("spec") if isinstance((body or {}).get("spec"), dict) else {}
    asked, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(asked, dict) and isinstance(path, dict):
        raise errors.invalid(SELF_REVIEW, "", [("spec.nonResourceAttributes", "Invalid value: cannot be specified in "
                                                "combination with resourceAttributes")])
    if not isinstance(asked, dict) and not isinstance(path, dict):
        raise errors.invalid(SELF_REVIEW, "", [("spec.resourceAttributes", "Invalid value: null: exactly one of "
                                                "nonResourceAttributes or resourceAttributes must be specified")])
    if isinstance(asked, dict):
        fields = [asked.get(field, "") for field in ("verb", "group", "resource", "subresource", "namespace", "name")]
        if not all(isinstance(value, str) for value in fields):
            raise errors.bad_request("spec.resourceAttributes: every attribute is a string")
        allowed = allows(user, Attributes(*fields))
    else:
        allowed = allows(user, None)
    return {"kind": SELF_REVIEW.kind, "apiVersion": SELF_REVIEW.group_version, "metadata": {"creationTimestamp": None},
            "spec": spec, "status": {"allowed": allowed}}


def validate(kind, obj: dict) -> list[tuple[str, str]]:
    """kube-apiserver's defaults (a roleRef's and a User or Group subject's ``apiGroup``) and field errors for
    a Role, ClusterRole or binding; nothing for other kinds."""
    if kind is ROLE or kind is CLUSTER_ROLE:
        rules = obj.get("rules")
        if rules is not None and not isinstance(rules, list):
            return [("rules", "Invalid value: must be a list of rules")]
        causes = []
        for i, rule in enumerate(rules or ()):
            causes += _rule_errors(rule, f"rules[{i}]", kind is ROLE)
        return causes
    if kind is not ROLE_BINDING and kind is not CLUSTER_ROLE_BINDING:
        return []
    ref = obj.get("roleRef")
    if not isinstance(ref, dict):
        return [("roleRef", "Required value")]
    ref.setdefault("apiGroup", GROUP)
    kinds = ("Role", "ClusterRole") if kind is ROLE_BINDING else ("ClusterRole",)
    causes = [] if ref["apiGroup"] == GROUP else [("roleRef.apiGroup", _unsupported(ref["apiGroup"], (GROUP,)))]
    if ref.get("kind") not in kinds:
        causes.append(("roleRef.kind", _unsupported(ref.get("kind"), kinds)))
    if not ref.get("name") or not isinstance(ref["name"], str):
        causes.append(("roleRef.name", "Required value"))
    subjects = obj.get("subjects")
    if subjects is not None and not isinstance(subjects, list):
        return [*causes, ("subjects", "Invalid value: must be a list of subjects")]
    for i, subject in enumerate(subjects or ()):
        where = f"subjects[{i}]"
        if not isinstance(subject, dict):
            causes.append((where, "Invalid value: must be a subject"))
            continue
        if subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", GROUP)
        if not subject.get("name") or not isinstance(subject["name"], str):
            causes.append((f"{where}.name", "Required value"))
        if subject.get("kind") == "ServiceAccount":
            if kind is CLUSTER_ROLE_BINDING and not subject.get("namespace"):
                causes.append((f"{where}.namespace", "Required value"))
        elif subject.get("kind") in ("User", "Group"):
            if subject["apiGroup"] != GROUP:
                causes.append((f"{where}.apiGroup", _unsupported(subject["apiGroup"], (GROUP,))))
        else:
            causes.append((f"{where}.kind", _unsupported(subject.get("kind"), ("ServiceAccount", "User", "Group"))))
    return causes


def _rule_errors(rule, where: str, namespaced: bool) -> list[tuple[str, str]]:
    if not isinstance(rule, dict):
        return [(where, "Invalid value: must be a policy rule")]
    lists = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
    wrong = [f"{where}.{field}" for field in lists if not _strings(rule.get(field))]
    if wrong:
        return [(field, "Invalid value: must be a list of strings") for field in wrong]
    causes = [] if rule.get("verbs") else [(f"{where}.verbs", "Required value: verbs must contain at least one value")]
    if rule.get("nonResourceURLs"):
        if namespaced:
            causes.append((f"{where}.nonResourceURLs", "Invalid value: namespaced rules cannot apply to non-resource "
                                                       "URLs"))
        elif rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append((f"{where}.nonResourceURLs", "Invalid value: rules cannot apply to both regular resources "
                                                       "and non-resource URLs"))
        return causes
    if not rule.get("apiGroups"):
        causes.append((f"{where}.apiGroups", "Required value: resource rules must supply at least one api group"))
    if not rule.get("resources"):
        causes.append((f"{where}.resources", "Required value: resource rules must supply at least one resource"))
    return causes


def _strings(value) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(item, str) for item in value))


def _unsupported(value, supported: tuple[str, ...]) -> str:
    return f"Unsupported value: {json.dumps(value)}: supported values: " + ", ".join(f'"{s}"' for s in supported)


def _dicts(value) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _names(subject: dict, user) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        return user.name == f"system:serviceaccount:{subject.get('namespace', '')}:{name}"
    return False


def _grants(rule: dict, attributes: Attributes) -> bool:
    def has(field: str, value: str) -> bool:
        listed = rule.get(field) if isinstance(rule.get(field), list) else []
        return "*" in listed or value in listed
    if not has("verbs", attributes.verb) or not has("apiGroups", attributes.group):
        return False
    resources = rule.get("resources") if isinstance(rule.get("resources"), list) else []
    if attributes.subresource:
        wanted = f"{attributes.resource}/{attributes.subresource}"
        if not ("*" in resources or wanted in resources or f"*/{attributes.subresource}" in resources):
            return False
    elif not ("*" in resources or attributes.resource in resources):
        return False
    names = rule.get("resourceNames") if isinstance(rule.get("resourceNames"), list) else []
    return not names or attributes.name in names
