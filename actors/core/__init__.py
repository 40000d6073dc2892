"""The scheduler core: queues, applications, nodes and partitions deciding where asks run.

It speaks only the SI (``si``) and knows nothing of Kubernetes.
"""
