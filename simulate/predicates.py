"""Node selectors and taints for the simulated cluster (the few Kubernetes predicates a trace uses).

Asks carry their node selector and tolerations, nodes their labels and taints, as JSON in tags and
attributes under the keys below; the core calls :meth:`SimPredicates.check` only for such asks and nodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache

from actors.core.plugins import NoView
from si.kubernetes import tolerates
from simulate.inputs import Taint, Toleration

SELECTOR_TAG = "simulate.nodeSelector"
TOLERATIONS_TAG = "simulate.tolerations"
LABELS_ATTR = "simulate.labels"
TAINTS_ATTR = "simulate.taints"
_BLOCKING = ("NoSchedule", "NoExecute")


@lru_cache(maxsize=4096)
def _selector(text: str) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(pair) for pair in json.loads(text)) if text else ()


@lru_cache(maxsize=4096)
def _tolerations(text: str) -> tuple[Toleration, ...]:
    return tuple(Toleration(**t) for t in json.loads(text)) if text else ()


@lru_cache(maxsize=4096)
def _labels(text: str) -> dict[str, str]:
    return dict(json.loads(text)) if text else {}


@lru_cache(maxsize=4096)
def _taints(text: str) -> tuple[Taint, ...]:
    return tuple(Taint(**t) for t in json.loads(text) if t["effect"] in _BLOCKING) if text else ()


def ask_tags(node_selector, tolerations) -> dict[str, str]:
    tags = {}
    if node_selector:
        tags[SELECTOR_TAG] = json.dumps([list(p) for p in node_selector])
    if tolerations:
        tags[TOLERATIONS_TAG] = json.dumps([vars(t) for t in tolerations])
    return tags


def node_attributes(labels, taints) -> dict[str, str]:
    attributes = {}
    if labels:
        attributes[LABELS_ATTR] = json.dumps([list(p) for p in labels])
    if taints:
        attributes[TAINTS_ATTR] = json.dumps([vars(t) for t in taints])
    return attributes


class SimPredicates:
    def ask_constrained(self, tags: Mapping[str, str]) -> bool:
        return SELECTOR_TAG in tags

    def node_restricted(self, attributes: Mapping[str, str]) -> bool:
        return bool(_taints(attributes.get(TAINTS_ATTR, "")))

    def view(self) -> NoView:
        return NoView()

    def check(self, ask_tags, node_id, node_attributes, node_allocation_tags, view) -> str | None:
        labels = _labels(node_attributes.get(LABELS_ATTR, ""))
        for key, value in _selector(ask_tags.get(SELECTOR_TAG, "")):
            if labels.get(key) != value:
                return "node(s) didn't match Pod's node affinity/selector"
        tolerations = _tolerations(ask_tags.get(TOLERATIONS_TAG, ""))
        for taint in _taints(node_attributes.get(TAINTS_ATTR, "")):
            if not any(tolerates(t, taint) for t in tolerations):
                return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        return None

    def ask_prefers(self, tags: Mapping[str, str]) -> bool:
        return False

    def score(self, ask_tags, node_id, node_attributes, view) -> float:
        return 0.0
