"""The SI protobuf module: generated from si.proto, wire compatible with YuniKorn's scheduler-interface."""

import pathlib
import subprocess
import sys

import pytest

from si import si_pb2

SI_DIR = pathlib.Path(si_pb2.__file__).parent

# (message, field, number) as YuniKorn's scheduler-interface numbers them; a mismatch breaks the wire.
UPSTREAM_FIELD_NUMBERS = [
    ("RegisterResourceManagerRequest", "rmID", 1), ("RegisterResourceManagerRequest", "policyGroup", 3),
    ("RegisterResourceManagerRequest", "config", 5), ("RegisterResourceManagerRequest", "extraConfig", 6),
    ("AllocationRequest", "releases", 2), ("AllocationRequest", "rmID", 3),
    ("AllocationRequest", "allocations", 4),
    ("ApplicationRequest", "new", 1), ("ApplicationRequest", "remove", 2), ("ApplicationRequest", "rmID", 3),
    ("NodeRequest", "nodes", 1), ("NodeRequest", "rmID", 2),
    ("AllocationResponse", "new", 1), ("AllocationResponse", "released", 2),
    ("AllocationResponse", "rejectedAllocations", 5),
    ("ApplicationResponse", "rejected", 1), ("ApplicationResponse", "accepted", 2),
    ("ApplicationResponse", "updated", 3),
    ("UpdatedApplication", "stateTransitionTimestamp", 3), ("UpdatedApplication", "message", 4),
    ("Resource", "resources", 1), ("Quantity", "value", 1),
    ("AddApplicationRequest", "ugi", 4), ("AddApplicationRequest", "tags", 5),
    ("AddApplicationRequest", "executionTimeoutMilliSeconds", 6), ("AddApplicationRequest", "placeholderAsk", 7),
    ("AddApplicationRequest", "gangSchedulingStyle", 8),
    ("Allocation", "allocationKey", 1), ("Allocation", "allocationTags", 2), ("Allocation", "resourcePerAlloc", 5),
    ("Allocation", "priority", 6), ("Allocation", "nodeID", 8), ("Allocation", "applicationID", 9),
    ("Allocation", "partitionName", 10), ("Allocation", "taskGroupName", 11), ("Allocation", "placeholder", 12),
    ("Allocation", "originator", 14), ("Allocation", "preemptionPolicy", 15),
    ("AllocationReleasesRequest", "allocationsToRelease", 1),
    ("AllocationRelease", "partitionName", 1), ("AllocationRelease", "applicationID", 2),
    ("AllocationRelease", "terminationType", 4), ("AllocationRelease", "message", 5),
    ("AllocationRelease", "allocationKey", 6),
    ("NodeInfo", "nodeID", 1), ("NodeInfo", "action", 2), ("NodeInfo", "attributes", 3),
    ("NodeInfo", "schedulableResource", 4),
    ("RejectedAllocation", "reason", 3), ("PredicatesArgs", "allocate", 3),
    ("PreemptionPredicatesArgs", "preemptAllocationKeys", 3), ("PreemptionPredicatesArgs", "startIndex", 4),
    ("PreemptionPredicatesResponse", "index", 2),
    ("UpdateContainerSchedulingStateRequest", "state", 3), ("UpdateContainerSchedulingStateRequest", "reason", 4),
    ("UpdateConfigurationRequest", "rmID", 2), ("UpdateConfigurationRequest", "config", 4),
    ("UpdateConfigurationRequest", "extraConfig", 5),
    ("EventRecord", "type", 1), ("EventRecord", "objectID", 2), ("EventRecord", "message", 5),
    ("EventRecord", "timestampNano", 6), ("EventRecord", "eventChangeType", 7),
    ("EventRecord", "eventChangeDetail", 8), ("EventRecord", "referenceID", 9), ("EventRecord", "resource", 10),
]

UPSTREAM_ENUM_VALUES = [
    ("TerminationType", "STOPPED_BY_RM", 1), ("TerminationType", "PLACEHOLDER_REPLACED", 4),
    ("NodeInfo.ActionFromRM", "DECOMISSION", 4), ("NodeInfo.ActionFromRM", "CREATE_DRAIN", 6),
    ("EventRecord.Type", "USERGROUP", 5), ("EventRecord.ChangeType", "REMOVE", 3),
    ("EventRecord.ChangeDetail", "REQUEST_ALLOC", 101), ("EventRecord.ChangeDetail", "APP_ALLOC", 200),
    ("EventRecord.ChangeDetail", "APP_STARTING", 205), ("EventRecord.ChangeDetail", "APP_RUNNABLE_QUOTA", 216),
    ("EventRecord.ChangeDetail", "NODE_ALLOC", 303), ("EventRecord.ChangeDetail", "NODE_OCCUPIED", 305),
    ("EventRecord.ChangeDetail", "QUEUE_PREEMPTION", 407), ("EventRecord.ChangeDetail", "ALLOC_NODEREMOVED", 504),
    ("EventRecord.ChangeDetail", "UG_GROUP_RESOURCE", 604),
    ("UpdateContainerSchedulingStateRequest.SchedulingState", "FAILED", 4),
]


def test_generated_module_matches_a_fresh_protoc_run(tmp_path):
    pytest.importorskip("grpc_tools")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{SI_DIR}", f"--python_out={tmp_path}",
                    "si.proto"], check=True)
    fresh = (tmp_path / "si_pb2.py").read_text()
    committed = (SI_DIR / "si_pb2.py").read_text()
    assert fresh == committed, "si/si_pb2.py is stale: regenerate it with grpc_tools.protoc from si/si.proto"


@pytest.mark.parametrize(("message", "field", "number"), UPSTREAM_FIELD_NUMBERS)
def test_field_numbers_follow_the_scheduler_interface(message, field, number):
    descriptor = si_pb2.DESCRIPTOR.message_types_by_name[message]
    assert descriptor.fields_by_name[field].number == number


@pytest.mark.parametrize(("enum", "name", "number"), UPSTREAM_ENUM_VALUES)
def test_enum_values_follow_the_scheduler_interface(enum, name, number):
    scope = si_pb2
    for part in enum.split("."):
        scope = getattr(scope, part)
    assert scope.Value(name) == number


def test_asks_are_allocations_without_a_node():
    request = si_pb2.AllocationRequest(rmID="rm", allocations=[
        si_pb2.Allocation(allocationKey="ask", applicationID="app", partitionName="default",
                          resourcePerAlloc=si_pb2.Resource(resources={"vcore": si_pb2.Quantity(value=500)}),
                          allocationTags={"kubernetes.io/meta/namespace": "ns"}, priority=10),
        si_pb2.Allocation(allocationKey="running", applicationID="app", nodeID="node-1"),
    ])
    parsed = si_pb2.AllocationRequest.FromString(request.SerializeToString())
    assert parsed == request
    assert [a.nodeID for a in parsed.allocations] == ["", "node-1"]
    assert parsed.allocations[0].resourcePerAlloc.resources["vcore"].value == 500


def test_removed_upstream_fields_stay_reserved():
    allocation = si_pb2.DESCRIPTOR.message_types_by_name["Allocation"]
    assert "allocationID" not in allocation.fields_by_name
    assert {3, 7, 13} & {f.number for f in allocation.fields} == set()


def _every_message(scope):
    for descriptor in scope.message_types_by_name.values():
        yield descriptor
        yield from _nested(descriptor)


def _nested(descriptor):
    for nested in descriptor.nested_types:
        if not nested.GetOptions().map_entry:
            yield nested
            yield from _nested(nested)


@pytest.mark.parametrize("descriptor", list(_every_message(si_pb2.DESCRIPTOR)), ids=lambda d: d.full_name)
def test_every_message_round_trips_with_its_fields_set(descriptor):
    """Each message, with every scalar, map and nested field filled, survives serialize/parse unchanged."""
    from google.protobuf import message_factory

    cls = message_factory.GetMessageClass(descriptor)
    message = cls()
    _fill(message)
    assert cls.FromString(message.SerializeToString()) == message
    assert message.ByteSize() > 0 or not descriptor.fields


def _fill(message, depth=0):
    from google.protobuf.descriptor import FieldDescriptor as F

    for field in message.DESCRIPTOR.fields:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.message_type is not None:
                _fill(getattr(message, field.name)["k"], depth + 1)
            else:
                getattr(message, field.name)["k"] = "v"
        elif field.type == F.TYPE_MESSAGE:
            if depth < 2:
                target = getattr(message, field.name).add() if _repeated(field) else getattr(message, field.name)
                _fill(target, depth + 1)
        else:
            value = {F.TYPE_STRING: "x", F.TYPE_BOOL: True, F.TYPE_ENUM: 1}.get(field.type, 7)
            if field.type == F.TYPE_ENUM:
                value = field.enum_type.values[-1].number
            if _repeated(field):
                getattr(message, field.name).append(value)
            else:
                setattr(message, field.name, value)


def _repeated(field):
    return field.is_repeated
