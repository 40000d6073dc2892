"""YuniKorn's admission controller: mutation and validation webhooks, their PKI and registration.

A separate process from the scheduler (``yunikorn-admission-controller``, see :mod:`webhook.cli`).
"""
