"""The Kubernetes shim: it talks to the cluster and speaks only SI to the scheduler core.

Pure logic (no actors, no HTTP): ``pods``, ``nodes``, ``objects`` (the watched kinds as records),
``constraints`` and ``predicates`` (node filters), ``translate`` (records to SI messages),
``schedconfig`` (the configmaps), ``lifecycle`` (state machines), ``outbox`` and ``eventbuffer``
(batching and rate limiting), ``state`` (snapshots for readers), ``keys``.
Plumbing: ``transport`` and ``client`` (the tenacity-wrapped API client), ``informer`` and ``kinds``,
``binder``, ``recorder`` and ``context`` (the actors), ``corelink`` (the SI boundary), ``ticker``,
``service`` (everything wired to a core), ``cli`` (the ``yunikorn-scheduler`` command) and
``embedded`` (its sample cluster).
"""
