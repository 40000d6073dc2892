"""The simulator: the real core against a simulated resource manager on a virtual clock; traces in,
reports out (``yunikorn-scheduler simulate``)."""
