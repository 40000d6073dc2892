"""The Kubernetes shim: it talks to the cluster and speaks only SI to the scheduler core.

Pure translation (no actors, no HTTP): ``pods``, ``nodes``, ``constraints``, ``translate``,
``predicates``, ``schedconfig``, ``lifecycle``. Plumbing: ``client`` (the tenacity-wrapped API client),
``informer``, ``binder``, ``recorder`` and ``context`` (the actors), ``service`` (wiring them to the
core) and ``cli`` (the ``yunikorn-scheduler`` command).
"""
