"""Pods, applications and nodes in SI messages: the only shapes the core ever receives from the shim.

A YuniKorn pod without a node is an *ask* (an ``Allocation`` with no ``nodeID``); a pod already on a
node is an *existing allocation* (with its ``nodeID``), and a pod of another scheduler is a *foreign*
allocation: no application, tag ``foreign`` = ``static`` for a static (mirror) pod, else ``default``.
The allocation key is the pod UID throughout.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from actors.shim import keys
from actors.shim.gang import Gang
from actors.shim.nodes import NodeRecord
from actors.shim.pods import PodRecord
from si import constants, si_pb2
from si.kubernetes import LABEL_DISABLE_STATE_AWARE

Allocations = Any  # a request's repeated Allocation field (protobuf's container type is not public)


def allocation_tags(pod: PodRecord, foreign: bool = False) -> dict[str, str]:
    """Namespace, pod name, creation time, every label, the constraints and required node when set,
    and for a foreign pod the ``foreign`` tag."""
    tags: dict[str, str] = {}
    _put_tags(tags, pod, foreign)
    return tags


def _put_tags(tags: MutableMapping[str, str], pod: PodRecord, foreign: bool) -> None:
    _put_shared_tags(tags, pod, foreign)
    _put_own_tags(tags, pod)


def _put_shared_tags(tags: MutableMapping[str, str], pod: PodRecord, foreign: bool) -> None:
    """The tags a workload's pods have in common (``_shaped``)."""
    tags[constants.TAG_NAMESPACE] = pod.namespace
    prefix = constants.TAG_LABEL_PREFIX
    for label, value in pod.labels.items():
        tags[prefix + label] = value
    if foreign:
        tags[constants.TAG_FOREIGN] = constants.FOREIGN_STATIC if pod.static else constants.FOREIGN_DEFAULT


def _put_own_tags(tags: MutableMapping[str, str], pod: PodRecord) -> None:
    """The tags of the pod alone."""
    tags[constants.TAG_POD_NAME] = pod.name
    tags[constants.TAG_CREATION_TIME] = str(int(pod.created))
    if pod.constraints:
        tags[keys.TAG_CONSTRAINTS] = pod.constraints
    if pod.required_node:
        tags[constants.TAG_REQUIRED_NODE] = pod.required_node


# An Allocation is built field by field: upb's constructor copies a map or message given as an
# argument through Python (measured: half of the time building one, once per pod).
def _with_pod(message: si_pb2.Allocation, pod: PodRecord, foreign: bool) -> si_pb2.Allocation:
    """``message`` with the pod's tags and resource."""
    _put_tags(message.allocationTags, pod, foreign)
    _put_resource(message, pod)
    return message


def _put_resource(message: si_pb2.Allocation, pod: PodRecord) -> None:
    resources = message.resourcePerAlloc.resources
    for name, value in pod.resource.items():
        resources[name].value = value


def _put_policy(message: si_pb2.Allocation, pod: PodRecord) -> None:
    policy = message.preemptionPolicy
    policy.allowPreemptSelf = pod.allow_preemption is not False
    policy.allowPreemptOther = pod.preempts


def allocation(pod: PodRecord, priority: int, partition: str = constants.DEFAULT_PARTITION,
               node_id: str = "", originator: bool = False, into: Allocations | None = None) -> si_pb2.Allocation:
    """A task's pod as an ask (no ``node_id``) or as an allocation already on ``node_id``; ``originator``:
    the pod that declared its application (upstream's Task.IsOriginator), never a placeholder. Built as
    the last of ``into`` when given (a request's allocations)."""
    originator = originator and not pod.placeholder
    if into is not None:
        return _shaped(into, pod, priority, partition, node_id, originator, False)
    message = _with_pod(si_pb2.Allocation(
        allocationKey=pod.uid, applicationID=pod.app_id, priority=priority, nodeID=node_id, partitionName=partition,
        taskGroupName=pod.task_group, placeholder=pod.placeholder, originator=originator), pod, foreign=False)
    _put_policy(message, pod)
    return message


def foreign_allocation(pod: PodRecord, priority: int, partition: str = constants.DEFAULT_PARTITION,
                       into: Allocations | None = None) -> si_pb2.Allocation:
    """A pod the core does not schedule, taking room on its node: no application, tagged ``foreign``;
    built as the last of ``into`` when given."""
    if into is not None:
        return _shaped(into, pod, priority, partition, pod.node_name, False, True)
    return _with_pod(si_pb2.Allocation(allocationKey=pod.uid, priority=priority, nodeID=pod.node_name,
                                       partitionName=partition), pod, foreign=True)


# What the allocations of one workload's pods share (labels and resource are one object for all of them,
# see ``pods``), built once into a shape that each starts from: a request's allocations are the pods on
# the nodes at recovery (3.9 us a pod from a copy of the shape against 5.3 built field by field). A new
# allocation copies the shape message (``CopyFrom``, in C: 1.0 us) rather than merging its serialized
# bytes (1.3 us, measured alike), which had replaced copying its tag and resource maps entry by entry.
# Only the outlet builds into requests, and nothing changes a shape; bounded as the pods' facts are.
SHAPES_KEPT = 4096
_shapes: dict[tuple, tuple[si_pb2.Allocation, Mapping[str, str], Any]] = {}


def _shaped(into: Allocations, pod: PodRecord, priority: int, partition: str, node_id: str, originator: bool,
            foreign: bool) -> si_pb2.Allocation:
    """The allocation of ``pod`` built as the last of ``into``, from the shape it shares with its workload's."""
    labels, resource = pod.labels, pod.resource
    # The ids stay unique while the shape holds both objects.
    key = (id(labels), id(resource), pod.namespace, pod.app_id, pod.task_group, pod.placeholder,
           pod.allow_preemption, pod.preempts, pod.static, priority, partition, originator, foreign)
    shape = _shapes.get(key)
    if shape is None:
        shape = _shapes[key] = (_shape(pod, priority, partition, originator, foreign), labels, resource)
        if len(_shapes) > SHAPES_KEPT:
            del _shapes[next(iter(_shapes))]
    message = into.add()
    message.CopyFrom(shape[0])
    message.allocationKey = pod.uid
    message.nodeID = node_id
    _put_own_tags(message.allocationTags, pod)
    return message


def _shape(pod: PodRecord, priority: int, partition: str, originator: bool, foreign: bool) -> si_pb2.Allocation:
    """The fields of ``pod``'s allocation its workload's pods share."""
    if foreign:
        shape = si_pb2.Allocation(priority=priority, partitionName=partition)
    else:
        shape = si_pb2.Allocation(applicationID=pod.app_id, priority=priority, partitionName=partition,
                                  taskGroupName=pod.task_group, placeholder=pod.placeholder, originator=originator)
        _put_policy(shape, pod)
    _put_shared_tags(shape.allocationTags, pod, foreign)
    _put_resource(shape, pod)
    return shape


def release(pod: PodRecord, message: str, partition: str = constants.DEFAULT_PARTITION,
            termination: int = si_pb2.STOPPED_BY_RM, foreign: bool = False) -> si_pb2.AllocationRelease:
    """Give back the pod's ask or allocation (a foreign one has no application)."""
    return si_pb2.AllocationRelease(
        partitionName=partition,
        applicationID="" if foreign else pod.app_id,
        allocationKey=pod.uid,
        terminationType=termination,
        message=message,
    )


def stray_release(allocation: si_pb2.Allocation) -> si_pb2.AllocationRelease:
    """Give back an allocation the core made for a pod that does not wait for one."""
    return si_pb2.AllocationRelease(
        partitionName=allocation.partitionName, applicationID=allocation.applicationID,
        allocationKey=allocation.allocationKey, terminationType=si_pb2.STOPPED_BY_RM,
        message="no pod waits for this allocation")


def application_tags(pod: PodRecord, namespace_tags: Mapping[str, str] | None, force: bool) -> dict[str, str]:
    """The tags of a pod's application: the namespace's (name, parent queue, quota...), the
    stateaware opt-out, ``application.create.force`` for a recovered application, and the gang's
    declaration."""
    tags = dict(namespace_tags) if namespace_tags else {constants.APP_TAG_NAMESPACE: pod.namespace}
    if pod.disable_state_aware:
        tags[constants.APP_TAG_DISABLE_STATE_AWARE] = "true"
        tags[LABEL_DISABLE_STATE_AWARE] = "true"
    if force:
        tags[constants.APP_TAG_CREATE_FORCE] = "true"
    if pod.task_groups:  # as upstream's shim tags the application with its gang's declaration
        tags[keys.ANNOTATION_TASK_GROUPS] = pod.task_groups
        if pod.policy_parameters:
            tags[keys.ANNOTATION_SCHEDULING_POLICY] = pod.policy_parameters
    return tags


def add_application(pod: PodRecord, tags: Mapping[str, str], partition: str = constants.DEFAULT_PARTITION,
                    gang: Gang | None = None) -> si_pb2.AddApplicationRequest:
    """The application of ``pod`` (its first pod decides queue and user), with its gang's placeholder
    ask, timeout and style when it has one."""
    request = si_pb2.AddApplicationRequest(
        applicationID=pod.app_id,
        queueName=pod.queue,
        partitionName=partition,
        ugi=si_pb2.UserGroupInformation(user=pod.user, groups=pod.groups),
        tags=tags,
    )
    if gang is not None:
        request.placeholderAsk.CopyFrom(gang.placeholder_ask.to_proto())
        request.executionTimeoutMilliSeconds = gang.timeout * 1000
        request.gangSchedulingStyle = gang.style
    return request


def node_info(node: NodeRecord, action: int) -> si_pb2.NodeInfo:
    """A ``NodeInfo`` for ``action``; a decommission carries only the node id."""
    info = si_pb2.NodeInfo(nodeID=node.name, action=action)
    if action == si_pb2.NodeInfo.DECOMISSION:
        return info
    info.attributes.update(node.attributes())  # field by field: see ``_with_pod`` (5.5 us a node against 4.0)
    info.schedulableResource.SetInParent()  # present even when empty: an update without one keeps the capacity
    resources = info.schedulableResource.resources
    for name, value in node.allocatable.items():
        resources[name].value = value
    return info
