"""What each request does to the store: the API semantics, free of HTTP plumbing."""

from __future__ import annotations

import calendar
import re
import time
import uuid
from dataclasses import dataclass

from kubesim import auth, deployments, disruption, errors, jobs, patch, priority, rbac, resize, volumes
from kubesim.paging import Pager, parse_limit
from kubesim.resources import APPS_WORKLOADS, BY_PLURAL, CRON_JOB, JOB, NAMESPACE, NODE, POD, Kind
from kubesim.selectors import combine, field_selector, label_selector
from kubesim.store import Store, clone, now_rfc3339

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Pod spec fields an update may change; everything else is immutable once created (binding sets nodeName).
_MUTABLE_POD_SPEC = {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"}
# As kube-apiserver lists them when it refuses an update (resources change only through pods/resize).
_UPDATABLE_POD_SPEC_FIELDS = ("`spec.containers[*].image`", "`spec.initContainers[*].image`",
                              "`spec.activeDeadlineSeconds`",
                              "`spec.tolerations` (only additions to existing tolerations)",
                              "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
                              "negative)")
_HAS_STATUS = {"pods", "nodes", "namespaces", "services", "poddisruptionbudgets", "persistentvolumeclaims",
               "persistentvolumes", "jobs", "deployments", "replicasets", "statefulsets", "daemonsets", "cronjobs"}
POLICIES = ("Foreground", "Background", "Orphan")
DEFAULT_GRACE_SECONDS = 30
# What kube-apiserver answers to a batch/v1 Job deleted without a propagation policy: its pods stay.
JOB_ORPHANS_WARNING = ('299 - "child pods are preserved by default when jobs are deleted; set '
                       'propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this '
                       'warning"')


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    grace_seconds: int | None = None
    propagation: str | None = None


def delete_options(query: dict, body) -> DeleteOptions:
    """A delete's options, from its query and its DeleteOptions body (which wins); 400 or 422 when bad."""
    merged = {key: query[key] for key in ("gracePeriodSeconds", "propagationPolicy", "orphanDependents")
              if key in query}
    if body is not None and not isinstance(body, dict):
        raise errors.bad_request("the body of a delete must be a DeleteOptions object")
    merged.update({key: value for key, value in (body or {}).items() if value is not None})
    grace = merged.get("gracePeriodSeconds")
    if grace is not None:
        try:
            grace = int(grace)
        except (TypeError, ValueError):
            raise errors.bad_request(f"gracePeriodSeconds must be an integer, not {grace!r}") from None
    policy = merged.get("propagationPolicy")
    orphan = merged.get("orphanDependents")
    if policy is None and orphan is not None:
        policy = "Orphan" if str(orphan).lower() == "true" else "Background"
    if policy is not None and policy not in POLICIES:
        supported = ", ".join(f'"{p}"' for p in POLICIES)
        raise errors.ApiError(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: '
                                              f'Unsupported value: "{policy}": supported values: {supported}',
                              {"group": "meta.k8s.io", "kind": "DeleteOptions"})
    return DeleteOptions(max(grace, 1) if grace is not None and grace < 0 else grace, policy)


def success(details: dict | None = None, code: int = 201) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details or {},
            "code": code}


class Api:
    """The verbs, as the HTTP server calls them; request bodies are the call's own (freshly decoded)."""

    def __init__(self, store: Store, priority_admission: bool = True, graceful_pods: bool = False) -> None:
        self.store = store
        self.priority_admission = priority_admission
        self.default_classes = priority.Defaults(store)
        self.graceful_pods = graceful_pods  # a kubelet ends what a graceful deletion starts
        self.collector = None  # the garbage collector, when kubesim plays one
        self.webhooks = None  # the admission webhooks' caller, when kubesim plays it
        self.tokens = None  # the service-account tokens' issuer (auth.Tokens)
        self.budgets = disruption.Budgets(store)
        self.pager = Pager()

    # Validation.
    def _validate(self, kind: Kind, obj: dict) -> None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise errors.invalid(kind, "", [("metadata", "Required value")])
        name = meta.get("name") or ""
        if not name and not meta.get("generateName"):
            raise errors.invalid(kind, "", [("metadata.name", "Required value: name or generateName is required")])
        pattern = _DNS_LABEL if kind is NAMESPACE else _DNS_SUBDOMAIN
        if name and (len(name) > 253 or not pattern.match(name)) and kind.plural != "events":
            raise errors.invalid(kind, name, [("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 '
                                               "subdomain must consist of lower case alphanumeric characters, '-' "
                                               "or '.', and must start and end with an alphanumeric character")])
        labels = meta.get("labels")
        if labels is not None and (not isinstance(labels, dict)
                                   or not all(isinstance(v, str) for v in labels.values())):
            raise errors.invalid(kind, name, [("metadata.labels", "Invalid value: labels must be strings")])
        if kind.plural == "secrets" and obj.get("type") == auth.TOKEN_SECRET_TYPE \
                and not (meta.get("annotations") or {}).get(auth.SA_NAME_ANNOTATION):
            raise errors.invalid(kind, name, [(f"metadata.annotations[{auth.SA_NAME_ANNOTATION}]", "Required value")])
        if kind is POD:
            spec = obj.get("spec")
            if spec is not None and not isinstance(spec, dict):
                raise priority.undecodable(kind, spec, "Pod.spec", "v1.PodSpec")
            containers = (spec or {}).get("containers")
            if containers is not None and not isinstance(containers, list):
                raise priority.undecodable(kind, containers, "PodSpec.spec.containers", "[]v1.Container")
            priority.check_int32(kind, (spec or {}).get("priority"), "PodSpec", "spec.priority")
        elif kind is priority.PRIORITY_CLASS:
            priority.check_int32(kind, obj.get("value"), "PriorityClass", "value")
        causes = jobs.validate_job(obj) if kind is JOB else rbac.validate(kind, obj)
        if kind in APPS_WORKLOADS:
            deployments.default_workload(kind, obj)  # before validation, as kube-apiserver defaults on decoding
            causes = deployments.validate_workload(obj, kind)
        elif kind is CRON_JOB:
            jobs.default_cron_job(obj)
            causes = jobs.validate_cron_job(obj)
        if causes:
            raise errors.invalid(kind, name, causes)
        if kind is POD:
            containers = (obj.get("spec") or {}).get("containers")
            if not containers:
                raise errors.invalid(kind, name, [("spec.containers", "Required value")])
            for i, container in enumerate(containers):
                if not isinstance(container, dict) or not container.get("name"):
                    raise errors.invalid(kind, name, [(f"spec.containers[{i}].name", "Required value")])
                if not container.get("image"):
                    raise errors.invalid(kind, name, [(f"spec.containers[{i}].image", "Required value")])
            causes = [cause for field in ("containers", "initContainers")
                      for i, container in enumerate(obj["spec"].get(field) or ()) if isinstance(container, dict)
                      for cause in resize.container_problems(container, f"spec.{field}[{i}]",
                                                             obj["spec"].get("restartPolicy"))]
            if causes:
                raise errors.invalid(kind, name, causes)

    def _require_namespace(self, kind: Kind, namespace: str) -> None:
        if kind.namespaced and self.store.find(NAMESPACE, "", namespace) is None:
            raise errors.not_found(NAMESPACE, namespace)

    def _defaults(self, kind: Kind, obj: dict) -> None:
        if kind is POD:
            spec = obj["spec"]
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
            status["qosClass"] = qos_class(spec)
        elif kind is NAMESPACE:
            obj["status"] = {"phase": "Active"}
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        elif kind is NODE:
            obj.setdefault("status", {})
        elif kind is volumes.VOLUME or kind is volumes.CLAIM:
            obj["status"] = {"phase": "Pending"}
        elif kind in APPS_WORKLOADS or kind is CRON_JOB:
            obj["status"] = deployments.initial_status(kind)
        elif kind is priority.PRIORITY_CLASS:
            obj.setdefault("preemptionPolicy", priority.PREEMPT_LOWER)

    # Verbs.
    def create(self, kind: Kind, namespace: str, body, subresource: str = "", name: str = "",
               user: dict | None = None) -> tuple[int, dict]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        if subresource == "binding":
            return 201, self.bind(namespace, name, body)
        if subresource == "eviction":
            options = delete_options({}, body.get("deleteOptions"))  # graceful, as any deletion of the pod
            self.budgets.evict(namespace, name, lambda: self.delete(POD, namespace, name, options))
            return 201, success({"name": name, "kind": "pods"})
        if subresource == "token" and kind.plural == "serviceaccounts" and self.tokens is not None:
            return 201, self.tokens.request(namespace, name, body)
        if subresource:
            raise errors.method_not_allowed(f"create is not supported on {kind.plural}/{subresource}")
        obj = body  # a request body decoded for this call alone: nobody else holds it
        obj.pop("status", None) if kind is POD else None
        self._validate(kind, obj)
        self._require_namespace(kind, namespace)
        for system_field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            obj["metadata"].pop(system_field, None)  # as kube-apiserver's BeforeCreate clears them
        self._defaults(kind, obj)
        if self.webhooks is not None:
            obj = self.webhooks.admit(kind, "CREATE", namespace, obj, None, user)
        uid = str(uuid.uuid4())
        with self.store.lock:
            if kind is JOB:
                meta = obj["metadata"]
                meta["name"] = meta.get("name") or self.store.generated_name(kind, namespace, meta["generateName"])
                jobs.default_job(obj, uid)
            self._admit(kind, obj, creating=True)
            created = self.store.create(kind, namespace, obj, uid)
        if kind is disruption.PDB:  # its status is known at once, as the disruption controller writes it
            created = clone(created)
            created["status"] = disruption.budget_status(self.store, created)
            created = self.store.replace(kind, namespace, created["metadata"]["name"], created, None)
        return 201, created

    def _admit(self, kind: Kind, obj: dict, creating: bool) -> None:
        """The admission plugins kubesim plays (under the store lock)."""
        if kind is volumes.CLAIM and creating:
            volumes.default_claim_class(self.store, obj)
        if not self.priority_admission:
            if kind is POD and creating:
                obj["spec"].setdefault("priority", 0)
            return
        if kind is POD and creating:
            priority.admit_pod(self.store, self.default_classes, obj)
        elif kind is priority.PRIORITY_CLASS:
            priority.admit_class(self.default_classes, obj, creating)

    def bind(self, namespace: str, name: str, body: dict) -> dict:
        target = (body.get("target") or {}).get("name")
        if not target:
            raise errors.invalid(POD, name, [("target.name", "Required value")])
        with self.store.lock:
            pod = self.store.get(POD, namespace, name)
            bound = pod.get("spec", {}).get("nodeName")
            if bound:
                raise errors.ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": '
                                      f'pod {name} is already assigned to node "{bound}"',
                                      {"name": name, "kind": "pods/binding"})
            if pod["metadata"].get("deletionTimestamp"):
                raise errors.conflict(POD, name, "pod is being deleted")
            updated = clone(pod)
            updated["spec"]["nodeName"] = target
            conditions = [c for c in updated["status"].get("conditions", []) if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now_rfc3339()})
            updated["status"]["conditions"] = conditions
            self.store.replace(POD, namespace, name, updated, None)
        return success()

    def update(self, kind: Kind, namespace: str, name: str, body, subresource: str = "",
               user: dict | None = None) -> tuple[int, dict]:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the URL ({name})")
        current = self.store.find(kind, namespace, name)
        if self.webhooks is not None and not subresource and current is not None:
            body = self.webhooks.admit(kind, "UPDATE", namespace, body, current, user)
        with self.store.lock:
            current = self.store.get(kind, namespace, name)
            expected = (body.get("metadata") or {}).get("resourceVersion")
            new = self._merge_write(kind, current, body, subresource)
            return 200, self.store.replace(kind, namespace, name, new, expected)

    def _merge_write(self, kind: Kind, current: dict, new: dict, subresource: str) -> dict:
        """What a write may change: ``/status`` writes only status; the main resource never writes status."""
        if subresource == "status":
            merged = clone(current)
            merged["status"] = new.get("status", {})
            if "resourceVersion" in (new.get("metadata") or {}):
                merged["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
            return merged
        if subresource == "resize" and kind is POD:
            return resize.resized(current, new, qos_class)
        if subresource:
            raise errors.method_not_allowed(f"update is not supported on {kind.plural}/{subresource}")
        new.setdefault("metadata", {})
        self._validate(kind, {**new, "metadata": {**new["metadata"], "name": current["metadata"]["name"]}})
        if kind.plural in _HAS_STATUS:
            new["status"] = current.get("status", {})
        if kind in (rbac.ROLE_BINDING, rbac.CLUSTER_ROLE_BINDING) and new.get("roleRef") != current.get("roleRef"):
            raise errors.invalid(kind, current["metadata"]["name"], [("roleRef", "Invalid value: cannot change roleRef")])
        if kind is priority.PRIORITY_CLASS:
            self._admit(kind, new, creating=False)
        if kind is POD:
            self._keep_admitted_priority(current, new)
            self._check_pod_spec_change(current, new)
        return new

    def _keep_admitted_priority(self, current: dict, new: dict) -> None:
        """An update that leaves out what admission set at creation keeps it, as the Priority plugin does."""
        if not isinstance(new.get("spec"), dict):
            return
        for field in ("priority", "preemptionPolicy"):
            if new["spec"].get(field) is None and current["spec"].get(field) is not None:
                new["spec"][field] = current["spec"][field]

    def _check_pod_spec_change(self, current: dict, new: dict) -> None:
        old_spec, new_spec = current.get("spec", {}), new.get("spec", {})
        for key in old_spec.keys() | new_spec.keys():
            if key in _MUTABLE_POD_SPEC or old_spec.get(key) == new_spec.get(key):
                continue
            if key in ("containers", "initContainers") and _only_images_differ(old_spec.get(key), new_spec.get(key)):
                continue
            name = current["metadata"]["name"]
            raise errors.invalid(POD, name, [("spec", "Forbidden: pod updates may not change fields other than "
                                              + ",".join(_UPDATABLE_POD_SPEC_FIELDS))])

    def patch(self, kind: Kind, namespace: str, name: str, body, content_type: str,
              subresource: str = "") -> tuple[int, dict]:
        """``content_type`` is one of the patch types (the server refuses any other with 415)."""
        with self.store.lock:
            current = self.store.get(kind, namespace, name)
            if content_type == patch.JSON_PATCH:
                patched = patch.json_patch(current, body)
            elif isinstance(body, dict):
                patched = patch.merge_patch(current, body, strategic=content_type == patch.STRATEGIC)
            else:
                raise errors.bad_request("a merge patch must be a JSON object")
            expected = (body.get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
            new = self._merge_write(kind, current, patched, subresource)
            return 200, self.store.replace(kind, namespace, name, new, expected)

    def delete(self, kind: Kind, namespace: str, name: str,
               options: DeleteOptions = DeleteOptions()) -> tuple[int, dict]:
        with self.store.lock:
            current = self.store.get(kind, namespace, name)
            if kind is POD and self.graceful_pods:
                terminating = self._terminate(current, options.grace_seconds)
                if terminating is not None:
                    return 200, terminating
            policy = options.propagation or ("Orphan" if kind is JOB else "Background")
            if self.collector is not None and policy == "Foreground":
                return 200, self.collector.delete_foreground(kind, current)
            if self.collector is not None and policy == "Orphan":
                self.collector.orphan(current["metadata"]["uid"])
            obj = self.store.delete(kind, namespace, name)
            if kind is NAMESPACE:
                for (plural, ns, child), _ in list(self.store.objects.items()):
                    if ns == name and plural != "namespaces":
                        self.store.delete(BY_PLURAL[plural], ns, child)
        return 200, obj

    def _terminate(self, pod: dict, grace: int | None) -> dict | None:
        """A running pod's graceful deletion: its deletionTimestamp set, its kubelet deletes it when the grace
        period is over; None when it goes at once (grace 0, or not on a node, or finished)."""
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds")
            grace = grace if isinstance(grace, int) and not isinstance(grace, bool) else DEFAULT_GRACE_SECONDS
        meta = pod["metadata"]
        if (not grace or not pod["spec"].get("nodeName")
                or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
            return None
        deadline = time.time() + grace
        if meta.get("deletionTimestamp") and _seconds(meta["deletionTimestamp"]) <= deadline:
            return pod  # already going, no later than this deletion asks
        updated = clone(pod)
        updated["metadata"]["deletionTimestamp"] = _rfc3339(deadline)
        updated["metadata"]["deletionGracePeriodSeconds"] = grace
        return self.store.replace(POD, meta["namespace"], meta["name"], updated, None)

    def get(self, kind: Kind, namespace: str, name: str) -> tuple[int, dict]:
        return 200, self.store.get(kind, namespace, name)

    def list(self, kind: Kind, namespace: str, query: dict) -> tuple[int, dict]:
        limit = parse_limit(query.get("limit"))
        token = query.get("continue")
        if token:
            items, rv, token, remaining = self.pager.next(token, limit)
        else:
            items, rv = self.store.list(kind, namespace, _matcher(kind, query))
            items, rv, token, remaining = self.pager.first(items, rv, limit)
        metadata = {"resourceVersion": str(rv)}
        if token:
            metadata["continue"], metadata["remainingItemCount"] = token, remaining
        return 200, {"kind": f"{kind.kind}List", "apiVersion": kind.group_version, "metadata": metadata,
                     "items": items}

    def watch(self, kind: Kind, namespace: str, query: dict):
        return self.store.watch(kind, namespace or None, _matcher(kind, query), query.get("resourceVersion"))


def qos_class(spec: dict) -> str:
    """The pod's QoS class as kube-apiserver computes it from its containers' cpu and memory: Guaranteed
    when every container limits both and requests what it limits (or nothing), BestEffort when none asks
    for either, else Burstable."""
    asks = False
    guaranteed = True
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        resources = (container.get("resources") if isinstance(container, dict) else None) or {}
        if not isinstance(resources, dict):
            return "BestEffort"
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if not isinstance(requests, dict) or not isinstance(limits, dict):
            return "BestEffort"
        wanted = {name: resize.quantity(value) for name, value in requests.items() if name in ("cpu", "memory")}
        capped = {name: resize.quantity(value) for name, value in limits.items() if name in ("cpu", "memory")}
        asks = asks or any(amount != 0 for amount in (*wanted.values(), *capped.values()))
        if set(capped) != {"cpu", "memory"} or any(amount != capped[name] for name, amount in wanted.items()):
            guaranteed = False
    return ("Guaranteed" if guaranteed else "Burstable") if asks else "BestEffort"


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _seconds(timestamp: str) -> float:
    return calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))


def _matcher(kind: Kind, query: dict):
    return combine(label_selector(query.get("labelSelector")), field_selector(query.get("fieldSelector"), kind.plural))


def _only_images_differ(old, new) -> bool:
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return False
    return all({**a, "image": None} == {**b, "image": None} for a, b in zip(old, new, strict=True))
