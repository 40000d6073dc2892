"""Queue configurations for tests, built instead of written out: ``config(queue("a", max={"vcore": 8}))``
is the default partition placing applications in the queue they name, under a root anyone may submit to."""

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


def config(*queues: dict, create: bool = True, **partition) -> str:
    """The default partition with ``queues`` under root; applications go to the queue they name (created
    when ``create``); ``partition`` adds keys such as ``preemption``."""
    return yaml.safe_dump({"partitions": [{
        "name": "default", "placementrules": [{"name": "provided", "create": create}], **partition,
        "queues": [queue("root", *queues, submitacl="*")]}]}, sort_keys=False)
