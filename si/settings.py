"""The settings registry: every key of ``yunikorn-defaults`` / ``yunikorn-configs`` the scheduler reads
(besides the queues YAML and the ``log.*`` levels), declared once with its owner, kind, default and
meaning. The core, the shim and the admission controller take their keys from here, and README's
settings table is generated from it (``python -m si.settings``).

``kind`` says how a value reads: ``duration`` (a Go duration), ``bool`` (Go's ``strconv.ParseBool``),
``int`` (a whole number, at least ``minimum``), ``decimal`` (a number above 0), ``string`` (not empty),
``text`` (any string), ``regex`` (comma-separated regular expressions), ``id`` (a user or group id).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from si.bounded import shown
from si.gobool import parse_bool
from si.goduration import parse_duration
from si.gonumber import parse_count, parse_decimal, parse_int

CORE, SHIM, ADMISSION = "core", "shim", "admission"


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    owner: str  # who reads it: CORE, SHIM or ADMISSION
    kind: str
    default: str  # as written in a configmap ("" for unset)
    doc: str
    name: str = ""  # the field of its owner's settings record; "" where the owner reads it on its own
    minimum: int | None = None
    aliases: tuple[str, ...] = ()  # other names accepted (upstream's code names)
    also_read_by: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.aliases)


_ADM = "admissionController."

REGISTRY: tuple[Setting, ...] = (
    Setting("service.clusterId", SHIM, "string", "mycluster", "the resource manager's id"),
    Setting("service.policyGroup", SHIM, "string", "queues", "the queues configuration is the key `<policyGroup>.yaml`",
            name="policy_group", also_read_by=(ADMISSION,)),
    Setting("service.enableConfigHotRefresh", SHIM, "bool", "true",
            "`false`: configmap changes wait for a restart (the admission controller's too)",
            name="enable_config_hot_refresh", also_read_by=(ADMISSION,)),
    Setting("service.schedulingInterval", CORE, "duration", "1s",
            "how often the core's timers run: Completing -> Completed, Starting timed out, terminated applications "
            "expiring, drained queues removed", name="scheduling_interval"),
    Setting("service.eventChannelCapacity", CORE, "int", "1048576",
            "SI requests that may wait in the core's actors; one more waits for room",
            name="event_channel_capacity", minimum=1),
    Setting("service.dispatchTimeout", CORE, "duration", "5m",
            "how long a request waits for that room; then it is dropped with an error (as upstream's dispatcher "
            "drops an event)", name="dispatch_timeout"),
    Setting("service.instanceTypeNodeLabelKey", SHIM, "string", "node.kubernetes.io/instance-type",
            "the node label whose value is the node's `si/instance-type` attribute; on a change every node is "
            "updated", name="instance_type_label", aliases=("service.nodeInstanceTypeNodeLabelKey",)),
    Setting("kubernetes.qps", SHIM, "decimal", "1000",
            "a token bucket every API call of the shim passes (binds, events, patches, lists, watches, retries), "
            "as client-go's", name="qps"),
    Setting("kubernetes.burst", SHIM, "int", "1000", "that token bucket's size", name="burst", minimum=1),
    Setting("service.volumeBindTimeout", SHIM, "duration", "10m",
            "how long the binder waits for a pod's `WaitForFirstConsumer` claims to be bound on the chosen node; "
            "then `PodVolumesBindFailure` and the pod is scheduled again", name="volume_bind_timeout"),
    Setting("health.checkInterval", CORE, "duration", "30s",
            "see \"Health checks\" (a malformed value keeps 30 s, as upstream)"),
    Setting("event.trackingEnabled", CORE, "bool", "true",
            "`false`: the core keeps no events and `/ws/v1/events/batch` and `/stream` answer 500",
            name="event_tracking"),
    Setting("event.requestCapacity", CORE, "int", "1000",
            "events kept from one scheduling batch, and told to the resource manager in one push interval "
            "(2 s, besides every event about an ask); the rest count in `yunikorn_event_total_not_channeled` "
            "and `_not_stored`",
            name="event_request_capacity", minimum=1),
    Setting("event.ringBufferCapacity", CORE, "int", "100000",
            "events kept for `/ws/v1/events/batch` (a smaller ring keeps the newest)",
            name="event_ring_capacity", minimum=1),
    Setting("event.maxStreams", CORE, "int", "100",
            "readers of `/ws/v1/events/stream` at once (at most the REST server's 100 stream threads); more get 503",
            name="event_max_streams", minimum=0),
    Setting("event.maxStreamsPerHost", CORE, "int", "15", "such readers from one client address",
            name="event_max_streams_per_host", minimum=0),
    Setting("event.RESTResponseSize", CORE, "int", "10000", "default and largest `count` of `/ws/v1/events/batch`",
            name="event_rest_response_size", minimum=1),
    Setting("service.disableGangScheduling", SHIM, "bool", "false",
            "`true`: task groups are ignored and no placeholder is made (see \"Gang scheduling\"); for "
            "applications submitted after the change", name="disabled"),
    Setting("service.placeholderImage", SHIM, "string", "registry.k8s.io/pause:3.7", "the placeholder pods' image",
            name="image"),
    Setting("service.placeholderRunAsUser", SHIM, "id", "", "the placeholder pods' `securityContext.runAsUser`",
            name="run_as_user"),
    Setting("service.placeholderRunAsGroup", SHIM, "id", "", "the placeholder pods' `securityContext.runAsGroup`",
            name="run_as_group"),
    Setting("service.placeholderFsGroup", SHIM, "id", "", "the placeholder pods' `securityContext.fsGroup`",
            name="fs_group"),
    Setting("service.maxPlaceholdersPerGang", SHIM, "int", "5000",
            "the most placeholder pods one gang may make (not an upstream key); see \"Gang scheduling\"",
            name="max_per_gang", minimum=1),
    Setting(_ADM + "webHook.amServiceName", ADMISSION, "string", "yunikorn-admission-controller-service",
            "the admission controller's service", name="am_service_name"),
    Setting(_ADM + "webHook.schedulerServiceAddress", ADMISSION, "string", "yunikorn-service:9080",
            "the scheduler's REST address (`/ws/v1/validate-conf`)", name="scheduler_service_address"),
    Setting(_ADM + "filtering.processNamespaces", ADMISSION, "regex", "",
            "namespaces whose pods are processed (empty: all)", name="process_namespaces"),
    Setting(_ADM + "filtering.bypassNamespaces", ADMISSION, "regex", "^kube-system$",
            "namespaces whose pods are left alone", name="bypass_namespaces"),
    Setting(_ADM + "filtering.labelNamespaces", ADMISSION, "regex", "",
            "namespaces whose pods get an application id", name="label_namespaces"),
    Setting(_ADM + "filtering.noLabelNamespaces", ADMISSION, "regex", "",
            "namespaces whose pods get none", name="no_label_namespaces"),
    Setting(_ADM + "filtering.generateUniqueAppId", ADMISSION, "bool", "false",
            "a generated application id is unique per pod", name="generate_unique_app_id"),
    Setting(_ADM + "filtering.defaultQueue", ADMISSION, "text", "root.default",
            "the queue set on a pod without one (empty: none)", name="default_queue"),
    Setting(_ADM + "accessControl.bypassAuth", ADMISSION, "bool", "false",
            "`true`: any user may set a pod's `yunikorn.apache.org/user.info` annotation", name="bypass_auth"),
    Setting(_ADM + "accessControl.trustControllers", ADMISSION, "bool", "true",
            "the controllers' own requests are trusted", name="trust_controllers"),
    Setting(_ADM + "accessControl.systemUsers", ADMISSION, "regex", "^system:serviceaccount:kube-system:",
            "users who are the controllers (trusted to set that annotation)", name="system_users"),
    Setting(_ADM + "accessControl.externalUsers", ADMISSION, "regex", "",
            "users allowed to set that annotation", name="external_users"),
    Setting(_ADM + "accessControl.externalGroups", ADMISSION, "regex", "",
            "groups allowed to set that annotation", name="external_groups"),
)
BY_KEY: dict[str, Setting] = {key: s for s in REGISTRY for key in s.keys}


def read(setting: Setting, text: str) -> object:
    """The value ``text`` gives ``setting`` (read by the Go parsers of ``si``); ``ValueError`` saying why it
    is not usable. ``regex`` values are left to their reader (they compile as they are matched)."""
    text = text.strip()
    kind = setting.kind
    if kind == "duration":
        seconds = parse_duration(text)
        if seconds < 0:
            raise ValueError(f"must not be negative: {shown(text)}")
        if seconds == 0:
            raise ValueError("must be more than 0")
        return seconds
    if kind == "int":
        value = parse_int(text)
        if value < (setting.minimum or 0):
            raise ValueError(f"must be at least {setting.minimum or 0}")
        return value
    if kind == "decimal":
        number = parse_decimal(text)
        if number <= 0:
            raise ValueError("must be more than 0")
        return number
    if kind == "bool":
        return parse_bool(text)
    if kind == "id":
        return parse_count(text)
    if kind == "string" and not text:
        raise ValueError("a value is needed")
    return text


def read_by(owner: str) -> tuple[Setting, ...]:
    """The settings ``owner`` reads, in the registry's order."""
    return tuple(s for s in REGISTRY if s.owner == owner or owner in s.also_read_by)


def all_keys(owner: str) -> frozenset[str]:
    """Every name (aliases too) of the settings ``owner`` owns."""
    return frozenset(key for s in REGISTRY if s.owner == owner for key in s.keys)


def markdown_table() -> str:
    """README's settings table."""
    rows = ["| key | owner | default | effect |", "|---|---|---|---|"]
    for s in REGISTRY:
        key = f"`{s.key}`" + "".join(f" (also `{alias}`)" for alias in s.aliases)
        default = f"`{s.default}`" if s.default else "unset"
        rows.append(f"| {key} | {s.owner} | {default} | {s.doc} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
