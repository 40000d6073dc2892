"""kubesim: a Kubernetes API server emulator on loopback.

It speaks enough of the real API (discovery, CRUD with optimistic concurrency, patches, list and watch
with resource versions, selectors, bookmarks, 410 Gone, binding, status and resize subresources) for the
official ``kubernetes`` client, so code tested against it works against a kube-apiserver. It is the
embedded default cluster of ``yunikorn-scheduler --embedded`` and the test cluster of the project. It plays
the cluster components a scheduler's tests need, each switchable: Priority admission, kubelets (and their
in-place resizes), admission webhooks, the Job, CronJob, Deployment, ReplicaSet, StatefulSet, DaemonSet,
PersistentVolume and ServiceAccount controllers and the garbage collector. Requests are authenticated
(service-account bearer tokens, impersonation; no credentials is the admin) and authorised by RBAC. Faults
can be injected (failed
requests, latency, dropped watches, expired resource versions).
"""

from kubesim.cluster import KubeSim

__all__ = ["KubeSim"]
