"""The configmap validation rule: ask the scheduler whether the pending queue configuration would run.

Only ``yunikorn-defaults`` and ``yunikorn-configs`` in the scheduler's namespace are checked. The
pending object is merged with the current pair, ``<service.policyGroup>.yaml`` is taken from the
result and POSTed to the scheduler's ``/ws/v1/validate-conf`` (a pair without that key has
nothing to validate). The scheduler being unreachable or
answering nonsense must not block configuration changes, so those cases allow (fail open) and log.
"""

from __future__ import annotations

import http.client
import json
import logging
from collections.abc import Callable

from si.bounded import elide
from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from webhook import constants as c
from webhook.conf import ConfigMapError, flatten, parse
from webhook.review import Decision, ReviewRequest
from webhook.view import ClusterView

log = logging.getLogger(__name__)

MAX_ANSWER = 64 * 1024  # bytes read of the scheduler's answer
MAX_REASON = 1000  # characters of the scheduler's reason passed on in a denial
SchedulerCheck = Callable[[str, str], dict]  # (address, yaml) -> {"allowed": bool, "reason": str}


def validate(request: ReviewRequest, view: ClusterView, namespace: str,
             check: SchedulerCheck | None = None) -> Decision:
    """The verdict for one ``/validate-conf`` review; ``namespace`` is the scheduler's namespace."""
    if request.kind != "ConfigMap" or request.namespace != namespace:
        return Decision.allow()
    configmap = request.object
    if not isinstance(configmap, dict):
        return Decision.deny("configmap object is missing or not a JSON object")
    metadata = configmap.get("metadata") or {}
    name = (metadata.get("name") if isinstance(metadata, dict) else None) or request.name
    if name not in c.CONFIGMAP_NAMES:
        return Decision.allow()
    pair = dict(view.configmaps())
    pair[name] = configmap
    try:
        values = flatten(pair.get(CONFIGMAP_DEFAULTS), pair.get(CONFIGMAP_CONFIGS))
    except ConfigMapError as error:
        return Decision.deny(f"configmap {name}: {error}")
    policy_group = parse(values).policy_group
    queues_yaml = values.get(f"{policy_group}.yaml")
    if queues_yaml is None:  # no queue configuration in the pair: the scheduler runs its defaults
        return Decision.allow()
    address = view.conf.scheduler_service_address
    try:
        answer = (check or post_validate_conf)(address, queues_yaml)
        allowed, reason = answer["allowed"], answer.get("reason") or ""
        if not isinstance(allowed, bool):
            raise ValueError(f"allowed is {allowed!r}, not a boolean")
    except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException) as error:
        log.warning("scheduler at %s could not validate configmap %s (%s); allowing it", address, name, error)
        return Decision.allow()
    if allowed:
        return Decision.allow()
    reason = elide(str(reason), MAX_REASON)  # relayed to the API server and the user: never the whole input
    log.info("configmap %s/%s denied by the scheduler: %s", namespace, name, reason)
    return Decision.deny(reason or "the scheduler rejected the configuration")


def post_validate_conf(address: str, queues_yaml: str, timeout: float = 5.0) -> dict:
    """POST the YAML to ``http://<address>/ws/v1/validate-conf`` and return the decoded answer."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        host, port = address, "80"
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request("POST", "/ws/v1/validate-conf", body=queues_yaml.encode(),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read(MAX_ANSWER + 1)
        if len(body) > MAX_ANSWER:
            raise ValueError(f"answer longer than {MAX_ANSWER} bytes")
        if response.status // 100 != 2:
            raise ValueError(f"HTTP {response.status}")
        answer = json.loads(body)
        if not isinstance(answer, dict):
            raise ValueError("answer is not a JSON object")
        return answer
    finally:
        connection.close()
