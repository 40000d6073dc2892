"""The scheduler's REST API: YuniKorn's ``/ws/v1`` inspection endpoints, served in-process."""
