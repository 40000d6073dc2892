"""Hostile queue configurations, shared by the parser tests and the configmap-flapping scenario."""

import pathlib

DEEP_BRACKETS = "[" * 30000 + "]" * 30000
ALIAS_BOMB = (pathlib.Path(__file__).parents[1] / "core" / "configs" / "bad" / "alias-bomb.yaml").read_text()
HUGE_EXPONENT = "partitions:\n  - name: default\n    queues:\n      - name: root\n        resources:\n" \
                "          max: {vcore: 1e" + "0" * 5000 + "}\n"
HOSTILE_CONFIGS = {"deep-brackets": DEEP_BRACKETS, "alias-bomb": ALIAS_BOMB, "huge-exponent": HUGE_EXPONENT,
                   "huge-integer": "partitions: " + "9" * 5000, "long-key": "k" * 100_000 + ": 1",
                   "recursive": "a: &a [*a]", "year-zero": "partitions: 0000-01-01"}
