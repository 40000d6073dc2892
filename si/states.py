"""The states and reasons the core and the shim name to each other and to readers.

The strings are upstream YuniKorn's, string for string: the core's application states travel in
``UpdatedApplication.state`` and are what REST's ``applicationState`` and the web UI show; the shim's
application and task states are what its state dump shows. Plain ``str`` constants (not enum members),
so they serialise as themselves everywhere (JSON, YAML, protobuf).
"""


class ApplicationState:
    """The core's application states (upstream core ``objects.ApplicationState``, plus ``Starting`` of
    state-aware scheduling)."""

    NEW = "New"
    ACCEPTED = "Accepted"
    STARTING = "Starting"
    RUNNING = "Running"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    FAILING = "Failing"
    FAILED = "Failed"
    REJECTED = "Rejected"
    RESUMING = "Resuming"
    EXPIRED = "Expired"


class ShimApplicationState:
    """The shim's application states (upstream k8shim ``ApplicationStates``); ``Reserving`` and
    ``Resuming`` belong to gang scheduling."""

    NEW = "New"
    SUBMITTED = "Submitted"
    ACCEPTED = "Accepted"
    RESERVING = "Reserving"
    RESUMING = "Resuming"
    RUNNING = "Running"
    COMPLETED = "Completed"
    REJECTED = "Rejected"
    FAILING = "Failing"
    FAILED = "Failed"
    KILLING = "Killing"
    KILLED = "Killed"


class TaskState:
    """The shim's task (pod) states (upstream k8shim ``TaskStates``)."""

    NEW = "New"
    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    ALLOCATED = "Allocated"
    BOUND = "Bound"
    REJECTED = "Rejected"
    COMPLETED = "Completed"
    KILLED = "Killed"
    FAILED = "Failed"


class Reason:
    """Why an application or its pods changed state: ``UpdatedApplication.message`` and the pods'
    failure reasons, upstream's strings."""

    RESERVATION_TIMEOUT = "ResourceReservationTimeout"  # a gang's reservation timed out (Hard: it fails)
    APPLICATION_FAILED = "ApplicationFailed"
    PLACEHOLDER_CREATION_FAILED = "PlaceholderCreationFailed"


class GangStyle:
    """``AddApplicationRequest.gangSchedulingStyle``: what a reservation that times out leads to."""

    SOFT = "Soft"
    HARD = "Hard"
