"""Queue configurations for tests, built instead of written out: ``config(queue("a", max={"vcore": 8}))``
is the default partition placing applications in the queue they name, under a root anyone may submit to;
``partition(queue("root", ...), placementrules=[...])`` spells out the root and the partition's keys."""

import yaml


def queue(name: str, *children: dict, guaranteed: dict | None = None, max: dict | None = None,  # noqa: A002
          properties: dict | None = None, **more) -> dict:
    """One queue; ``more`` are its other keys as the YAML spells them (``maxapplications``, ``submitacl``...)."""
    built: dict = {"name": name, **more}
    resources = {key: value for key, value in (("guaranteed", guaranteed), ("max", max)) if value is not None}
    if resources:
        built["resources"] = resources
    if properties:
        built["properties"] = properties
    if children:
        built["queues"] = list(children)
    return built


def partition(root: dict, **keys) -> str:
    """The default partition with the queue tree ``root``; ``keys`` are the partition's other keys as the YAML
    spells them (``placementrules``, ``limits``, ``preemption``, ``nodesortpolicy``...)."""
    return yaml.safe_dump({"partitions": [{"name": "default", **keys, "queues": [root]}]}, sort_keys=False)


def config(*queues: dict, create: bool = True, **keys) -> str:
    """The default partition with ``queues`` under a root anyone may submit to; applications go to the queue
    they name (created when ``create``); ``keys`` adds partition keys such as ``preemption``."""
    return partition(queue("root", *queues, submitacl="*"),
                     placementrules=[{"name": "provided", "create": create}], **keys)
