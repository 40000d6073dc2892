"""A namespace's YuniKorn annotations as the application tags the core reads, as upstream's shim
builds them:

* ``yunikorn.apache.org/parentqueue`` -> ``namespace.parentqueue`` (the queue the namespace's queue
  goes under, for a ``tag`` rule whose parent rule reads that tag, as the default configuration's);
* ``yunikorn.apache.org/namespace.quota`` (a JSON map of Kubernetes quantities) -> the maximum
  ``namespace.resourcequota``; without it, the deprecated ``yunikorn.apache.org/namespace.max.cpu``
  and ``namespace.max.memory`` (one quantity each) give it;
* ``yunikorn.apache.org/namespace.guaranteed`` -> ``namespace.resourceguaranteed``;
* ``yunikorn.apache.org/namespace.maxApps`` -> ``namespace.resourcemaxapps``.

Resources travel as SI JSON, ``{"resources": {"vcore": {"value": 1000}}}``; a malformed annotation is
left out (as upstream) and named among the problems, which the shim posts as a Warning event on the
namespace; an all-zero quota or guaranteed resource means none (as upstream).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from actors.shim import keys
from si import constants, gojson
from si.gonumber import parse_count
from si.quantity import QuantityError, from_kubernetes

log = logging.getLogger(__name__)

ANNOTATION_MAX_CPU = constants.DOMAIN_YUNIKORN + "namespace.max.cpu"  # deprecated by namespace.quota
ANNOTATION_MAX_MEMORY = constants.DOMAIN_YUNIKORN + "namespace.max.memory"  # deprecated by namespace.quota


def _si_json(resources: Mapping[str, int]) -> str:
    return json.dumps({"resources": {k: {"value": v} for k, v in sorted(resources.items())}}, separators=(",", ":"))


def _resource_map(annotation: str, text: str, problems: list[str]) -> dict[str, int] | None:
    """A quota annotation: upstream decodes it into a Go ``map[string]string`` of quantities."""
    try:
        return from_kubernetes(gojson.go_string_map(gojson.loads(text, f"annotation {annotation}"),
                                                    f"annotation {annotation}"))
    except ValueError as error:  # JSONError, QuantityError
        problems.append(f"annotation {annotation} ignored: {error}")
        return None


def _deprecated_quota(name: str, annotations: Mapping[str, str], problems: list[str]) -> dict[str, int] | None:
    cpu, memory = annotations.get(ANNOTATION_MAX_CPU, ""), annotations.get(ANNOTATION_MAX_MEMORY, "")
    if not cpu and not memory:
        return None
    log.warning("namespace %s: %s and %s are deprecated, use %s", name, ANNOTATION_MAX_CPU, ANNOTATION_MAX_MEMORY,
                keys.ANNOTATION_NAMESPACE_QUOTA)
    try:
        return from_kubernetes({k: v for k, v in ((constants.CPU, cpu), (constants.MEMORY, memory)) if v})
    except QuantityError as error:
        problems.append(f"annotations {ANNOTATION_MAX_CPU} / {ANNOTATION_MAX_MEMORY} ignored: {error}")
        return None


def namespace_app_tags(name: str, annotations: Mapping[str, str]) -> dict[str, str]:
    """The application tags a namespace contributes (see :func:`read_annotations`)."""
    return read_annotations(name, annotations)[0]


def read_annotations(name: str, annotations: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The application tags a namespace contributes (its name, parent queue, quota, guaranteed and
    maximum applications), and the problems of the annotations left out."""
    tags, problems = {constants.APP_TAG_NAMESPACE: name}, []
    parent = annotations.get(keys.ANNOTATION_PARENT_QUEUE)
    if parent:
        tags[constants.APP_TAG_PARENT_QUEUE] = parent
    quota_text = annotations.get(keys.ANNOTATION_NAMESPACE_QUOTA)
    if quota_text:
        if annotations.get(ANNOTATION_MAX_CPU) or annotations.get(ANNOTATION_MAX_MEMORY):
            log.warning("namespace %s: %s is used, the deprecated %s / %s are ignored", name,
                        keys.ANNOTATION_NAMESPACE_QUOTA, ANNOTATION_MAX_CPU, ANNOTATION_MAX_MEMORY)
        quota = _resource_map(keys.ANNOTATION_NAMESPACE_QUOTA, quota_text, problems)
    else:
        quota = _deprecated_quota(name, annotations, problems)
    if quota and any(quota.values()):
        tags[constants.APP_TAG_NAMESPACE_QUOTA] = _si_json(quota)
    guaranteed_text = annotations.get(keys.ANNOTATION_NAMESPACE_GUARANTEED)
    if guaranteed_text:
        guaranteed = _resource_map(keys.ANNOTATION_NAMESPACE_GUARANTEED, guaranteed_text, problems)
        if guaranteed and any(guaranteed.values()):
            tags[constants.APP_TAG_NAMESPACE_GUARANTEED] = _si_json(guaranteed)
    max_apps = annotations.get(keys.ANNOTATION_NAMESPACE_MAX_APPS)
    if max_apps:
        try:
            tags[constants.APP_TAG_NAMESPACE_MAX_APPS] = str(parse_count(max_apps))
        except ValueError as error:
            problems.append(f"annotation {keys.ANNOTATION_NAMESPACE_MAX_APPS} ignored: {error}")
    for problem in problems:
        log.warning("namespace %s: %s", name, problem)
    return tags, problems
