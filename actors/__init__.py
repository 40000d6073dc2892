"""yunikorn-py actors: the scheduler core (``actors.core``) and the Kubernetes shim (``actors.shim``)."""
