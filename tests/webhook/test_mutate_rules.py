"""Every mutation rule, each as its own case, over real HTTPS against the running controller.

Each case posts an AdmissionReview to ``/mutate`` and asserts on the pod (or workload) that results
from applying the returned JSONPatch.
"""

from __future__ import annotations

import pytest

from actors.shim.pods import parse_pod
from si.kubernetes import (
    ANNOTATION_QUEUE,
    ANNOTATION_USER_INFO,
    LABEL_APP_ID,
    LABEL_APPLICATION_ID,
    LABEL_DISABLE_STATE_AWARE,
    LABEL_QUEUE,
    LABEL_QUEUE_LEGACY,
    LABEL_SPARK_APP_SELECTOR,
)
from tests.webhook.harness import patched, pod, review, user_info, workload
from webhook import constants as c

LONG_NAMESPACE = "a-namespace-name-longer-than-twenty-six-chars"


def labels_of(obj: dict) -> dict:
    return obj["metadata"].get("labels") or {}


def annotations_of(obj: dict) -> dict:
    return obj["metadata"].get("annotations") or {}


# schedulerName.
def test_scheduler_name_is_set(rules):
    result = patched(pod(), rules.mutate(pod()))
    assert result["spec"]["schedulerName"] == "yunikorn"


def test_scheduler_name_replaces_another_scheduler(rules):
    original = pod(scheduler="default-scheduler")
    assert patched(original, rules.mutate(original))["spec"]["schedulerName"] == "yunikorn"


def test_everything_else_in_the_pod_is_unchanged(rules):
    original = pod(labels={"team": "x"}, annotations={"note": "keep"})
    result = patched(original, rules.mutate(original))
    assert result["spec"]["containers"] == original["spec"]["containers"]
    assert labels_of(result)["team"] == "x" and annotations_of(result)["note"] == "keep"


# applicationId.
def test_existing_application_id_label_is_kept(rules):
    original = pod(labels={LABEL_APPLICATION_ID: "app-1", LABEL_SPARK_APP_SELECTOR: "spark-9"})
    labels = labels_of(patched(original, rules.mutate(original)))
    assert labels[LABEL_APPLICATION_ID] == "app-1"
    assert labels[LABEL_APP_ID] == "app-1"


def test_spark_app_selector_becomes_the_application_id(rules):
    original = pod(labels={LABEL_SPARK_APP_SELECTOR: "spark-42"})
    labels = labels_of(patched(original, rules.mutate(original)))
    assert labels[LABEL_APPLICATION_ID] == "spark-42" and labels[LABEL_APP_ID] == "spark-42"


def test_canonical_app_id_label_is_used(rules):
    original = pod(labels={LABEL_APP_ID: "canon-1"})
    labels = labels_of(patched(original, rules.mutate(original)))
    assert labels[LABEL_APPLICATION_ID] == "canon-1" and labels[LABEL_APP_ID] == "canon-1"


def test_canonical_app_id_annotation_is_used(rules):
    original = pod(annotations={LABEL_APP_ID: "from-annotation"})
    labels = labels_of(patched(original, rules.mutate(original)))
    assert labels[LABEL_APPLICATION_ID] == "from-annotation"
    assert labels[LABEL_APP_ID] == "from-annotation"


def test_generated_application_id_is_per_namespace(rules):
    for namespace in ("default", "ns-enabled"):
        labels = labels_of(patched(pod(), rules.mutate(pod(), namespace=namespace)))
        assert labels[LABEL_APPLICATION_ID] == f"yunikorn-{namespace}-autogen"
        assert labels[LABEL_APP_ID] == f"yunikorn-{namespace}-autogen"


def test_unique_generated_application_id(rules, configured):
    configured({"admissionController.filtering.generateUniqueAppId": "true"})
    labels = labels_of(patched(pod(), rules.mutate(pod(), namespace=LONG_NAMESPACE)))
    assert labels[LABEL_APPLICATION_ID] == f"{LONG_NAMESPACE[:26]}-uniqueautogen"
    assert labels[LABEL_DISABLE_STATE_AWARE] == "true"


# disableStateAware.
def test_disable_state_aware_only_for_generated_ids(rules):
    generated = labels_of(patched(pod(), rules.mutate(pod())))
    assert generated[LABEL_DISABLE_STATE_AWARE] == "true"
    given = pod(labels={LABEL_APPLICATION_ID: "mine"})
    assert LABEL_DISABLE_STATE_AWARE not in labels_of(patched(given, rules.mutate(given)))


# queue.
def test_default_queue_is_added(rules):
    assert labels_of(patched(pod(), rules.mutate(pod())))[LABEL_QUEUE_LEGACY] == "root.default"


def test_existing_queue_label_is_kept(rules):
    original = pod(labels={LABEL_QUEUE_LEGACY: "root.analytics"})
    assert labels_of(patched(original, rules.mutate(original)))[LABEL_QUEUE_LEGACY] == "root.analytics"


def test_canonical_queue_label_is_copied(rules):
    original = pod(labels={LABEL_QUEUE: "root.batch"})
    labels = labels_of(patched(original, rules.mutate(original)))
    assert labels[LABEL_QUEUE_LEGACY] == "root.batch" and labels[LABEL_QUEUE] == "root.batch"


def test_configured_default_queue(rules, configured):
    configured({"admissionController.filtering.defaultQueue": "root.sandbox"})
    assert labels_of(patched(pod(), rules.mutate(pod())))[LABEL_QUEUE_LEGACY] == "root.sandbox"


def test_empty_default_queue_adds_no_queue(rules, configured):
    configured({"admissionController.filtering.defaultQueue": ""})
    labels = labels_of(patched(pod(), rules.mutate(pod())))
    assert LABEL_QUEUE_LEGACY not in labels and labels[LABEL_APPLICATION_ID] == "yunikorn-default-autogen"


# user.info.
def test_user_info_records_the_requesting_user(rules):
    result = patched(pod(), rules.mutate(pod(), user="alice", groups=("devs", "system:authenticated")))
    assert user_info(result) == {"user": "alice", "groups": ["devs", "system:authenticated"]}


def test_bypass_auth_adds_no_user_info(rules, configured):
    configured({"admissionController.accessControl.bypassAuth": "true"})
    result = patched(pod(), rules.mutate(pod()))
    assert user_info(result) is None and result["spec"]["schedulerName"] == "yunikorn"


def test_untrusted_user_may_not_set_user_info(rules):
    original = pod(annotations={ANNOTATION_USER_INFO: '{"user":"admin"}'})
    response = rules.mutate(original, user="mallory", groups=("devs",))
    assert response["allowed"] is False
    assert response["status"]["message"] == \
        "user mallory with groups [devs] is not allowed to set user annotation"
    assert "patch" not in response


def test_untrusted_user_info_is_denied_even_in_a_bypassed_namespace(rules):
    original = pod(annotations={ANNOTATION_USER_INFO: '{"user":"admin"}'})
    response = rules.mutate(original, namespace="kube-system", user="mallory", groups=())
    assert response["allowed"] is False and "mallory" in response["status"]["message"]


def test_trusted_controller_may_set_user_info(rules):
    original = pod(annotations={ANNOTATION_USER_INFO: '{"user":"bob","groups":["g"]}'})
    result = patched(original, rules.mutate(original, user="system:serviceaccount:kube-system:job-controller"))
    assert user_info(result) == {"user": "bob", "groups": ["g"]}


def test_controllers_are_not_trusted_when_disabled(rules, configured):
    configured({"admissionController.accessControl.trustControllers": "false"})
    original = pod(annotations={ANNOTATION_USER_INFO: '{"user":"bob"}'})
    response = rules.mutate(original, user="system:serviceaccount:kube-system:job-controller", groups=())
    assert response["allowed"] is False
    assert "system:serviceaccount:kube-system:job-controller" in response["status"]["message"]


def test_external_users_and_groups_are_trusted(rules, configured):
    configured({"admissionController.accessControl.externalUsers": "^ci-bot$",
                "admissionController.accessControl.externalGroups": "^platform-admins$"})
    original = pod(annotations={ANNOTATION_USER_INFO: '{"user":"carol"}'})
    assert rules.mutate(original, user="ci-bot", groups=())["allowed"] is True
    assert rules.mutate(original, user="dave", groups=("platform-admins",))["allowed"] is True
    assert rules.mutate(original, user="dave", groups=("devs",))["allowed"] is False


def test_malformed_user_info_is_denied(rules):
    original = pod(annotations={ANNOTATION_USER_INFO: "not json"})
    response = rules.mutate(original, user="system:serviceaccount:kube-system:job-controller")
    assert response["allowed"] is False and ANNOTATION_USER_INFO in response["status"]["message"]


def test_update_changing_user_info_is_denied(rules):
    old = pod(annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    new = pod(annotations={ANNOTATION_USER_INFO: '{"user":"root"}'})
    response = rules.mutate(new, operation="UPDATE", old=old)
    assert response["allowed"] is False
    assert response["status"]["message"] == "user info annotation change is not allowed"


def test_update_keeping_user_info_is_allowed_unchanged(rules):
    old = pod(annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    new = pod(labels={"extra": "1"}, annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    response = rules.mutate(new, operation="UPDATE", old=old)
    assert response["allowed"] is True and "patch" not in response


@pytest.mark.parametrize("kind", list(c.WORKLOAD_KINDS))
def test_workload_pod_template_gets_user_info(rules, kind):
    original = workload(kind)
    result = patched(original, rules.mutate(original, kind=kind, user="erin", groups=("ops",)))
    spec = result["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else result["spec"]
    annotations = spec["template"]["metadata"]["annotations"]
    assert annotations[ANNOTATION_USER_INFO] == '{"user":"erin","groups":["ops"]}'
    assert "schedulerName" not in spec["template"]["spec"]  # only the pods get a scheduler


def test_workload_keeps_template_annotations(rules):
    original = workload("Deployment", annotations={"note": "keep"})
    result = patched(original, rules.mutate(original, kind="Deployment"))
    assert result["spec"]["template"]["metadata"]["annotations"]["note"] == "keep"


def test_workload_with_foreign_user_info_is_denied(rules):
    original = workload("Job", annotations={ANNOTATION_USER_INFO: '{"user":"root"}'})
    response = rules.mutate(original, kind="Job", user="mallory", groups=())
    assert response["allowed"] is False and "mallory" in response["status"]["message"]


def _template_annotations(obj: dict, kind: str) -> dict:
    spec = obj["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else obj["spec"]
    return spec["template"]["metadata"].get("annotations") or {}


@pytest.mark.parametrize("kind", list(c.WORKLOAD_KINDS))
def test_workload_update_naming_someone_else_is_denied(rules, kind):
    """F5: the controllers the webhook trusts make pods from the template, so an UPDATE that puts another
    identity there is checked as a CREATE is."""
    old = workload(kind, annotations={ANNOTATION_USER_INFO: '{"user":"mallory"}'})
    new = workload(kind, annotations={ANNOTATION_USER_INFO: '{"user":"admin","groups":["admins"]}'})
    response = rules.mutate(new, kind=kind, operation="UPDATE", old=old, user="mallory", groups=("devs",))
    assert response["allowed"] is False
    assert response["status"]["message"] == "user mallory with groups [devs] is not allowed to set user annotation"
    added = rules.mutate(new, kind=kind, operation="UPDATE", old=workload(kind), user="mallory", groups=("devs",))
    assert added["allowed"] is False


def test_workload_update_keeping_user_info_is_allowed_unchanged(rules):
    old = workload("Deployment", annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    new = workload("Deployment", labels={"version": "2"}, annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    response = rules.mutate(new, kind="Deployment", operation="UPDATE", old=old, user="bob", groups=())
    assert response["allowed"] is True and "patch" not in response


def test_workload_update_removing_user_info_records_the_submitter(rules):
    """Without it, the pods would run as the controller that makes them."""
    old = workload("Job", annotations={ANNOTATION_USER_INFO: '{"user":"alice"}', "note": "keep"})
    new = workload("Job", annotations={"note": "keep"})
    result = patched(new, rules.mutate(new, kind="Job", operation="UPDATE", old=old, user="bob", groups=("g",)))
    assert _template_annotations(result, "Job") == {"note": "keep", ANNOTATION_USER_INFO: '{"user":"bob","groups":["g"]}'}


def test_trusted_users_may_change_a_workloads_user_info(rules):
    old = workload("CronJob", annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    new = workload("CronJob", annotations={ANNOTATION_USER_INFO: '{"user":"carol"}'})
    response = rules.mutate(new, kind="CronJob", operation="UPDATE", old=old,
                            user="system:serviceaccount:kube-system:cronjob-controller", groups=())
    assert response["allowed"] is True and "patch" not in response


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Job"])
def test_user_info_nested_5000_deep_is_denied_with_a_message(rules, kind):
    """F5: the value is parsed with a depth limit; before, Python's recursion limit made it a 500, which
    ``failurePolicy: Ignore`` turns into an unmutated admission."""
    deep = "[" * 5000 + "]" * 5000
    obj = pod(annotations={ANNOTATION_USER_INFO: deep}) if kind == "Pod" else \
        workload(kind, annotations={ANNOTATION_USER_INFO: deep})
    response = rules.mutate(obj, kind=kind, user="system:serviceaccount:kube-system:job-controller")
    assert response["allowed"] is False
    assert response["status"]["message"].startswith(f"invalid {ANNOTATION_USER_INFO} annotation: ")


@pytest.mark.parametrize("kind", ["Pod", "Deployment"])
def test_annotation_that_is_not_a_string_is_denied_with_a_message(rules, kind):
    nested: object = "x"
    for _ in range(900):  # within the body's nesting limit, beyond what repr() survives
        nested = {"a": nested}
    obj = pod(annotations={"note": nested}) if kind == "Pod" else workload(kind, annotations={"note": nested})
    response = rules.mutate(obj, kind=kind)
    assert response["allowed"] is False
    assert response["status"]["message"] == f"malformed {kind}: annotation note is not a string"


# Placeholders (F10): only the scheduler marks a pod as one.
SCHEDULER = "system:serviceaccount:default:yunikorn-admin"  # the default --scheduler-service-account
PLACEHOLDER = {c.ANNOTATION_PLACEHOLDER: "true"}


@pytest.mark.parametrize("namespace", ["default", "kube-system", "ns-disabled"])
def test_users_may_not_create_placeholders(rules, namespace):
    response = rules.mutate(pod(annotations=PLACEHOLDER), namespace=namespace, user="mallory", groups=("devs",))
    assert response["allowed"] is False
    assert response["status"]["message"] == ("user mallory is not allowed to set annotation "
                                             "internal.yunikorn.apache.org/placeholder: only the scheduler "
                                             "creates placeholder pods")


def test_the_scheduler_creates_placeholders(rules):
    original = pod(name="tg-app-group-abcdefghij", annotations=PLACEHOLDER)
    result = patched(original, rules.mutate(original, user=SCHEDULER, groups=("system:serviceaccounts",)))
    assert annotations_of(result)[c.ANNOTATION_PLACEHOLDER] == "true"
    assert result["spec"]["schedulerName"] == "yunikorn"


def test_controllers_may_not_create_placeholders_either(rules):
    response = rules.mutate(pod(annotations=PLACEHOLDER), user="system:serviceaccount:kube-system:job-controller")
    assert response["allowed"] is False


@pytest.mark.parametrize("mark", ["true", "false"])
def test_marking_or_unmarking_a_pod_as_placeholder_is_denied(rules, mark):
    old = pod(annotations={ANNOTATION_USER_INFO: '{"user":"alice"}'})
    new = pod(annotations={ANNOTATION_USER_INFO: '{"user":"alice"}', c.ANNOTATION_PLACEHOLDER: mark})
    for before, after in ((old, new), (new, old)):
        response = rules.mutate(after, operation="UPDATE", old=before, user="alice")
        assert response["allowed"] is False
        assert response["status"]["message"] == "placeholder annotation change is not allowed"
    assert rules.mutate(new, operation="UPDATE", old=new, user="alice")["allowed"] is True


@pytest.mark.parametrize("kind", list(c.WORKLOAD_KINDS))
def test_workload_templates_may_not_mark_placeholders(rules, kind):
    marked = workload(kind, annotations=PLACEHOLDER)
    response = rules.mutate(marked, kind=kind, user="alice")
    assert response["allowed"] is False and c.ANNOTATION_PLACEHOLDER in response["status"]["message"]
    updated = rules.mutate(marked, kind=kind, operation="UPDATE", old=workload(kind), user="alice")
    assert updated["allowed"] is False


def test_replicaset_from_a_controller_is_not_patched(rules):
    response = rules.mutate(workload("ReplicaSet"), kind="ReplicaSet",
                            user="system:serviceaccount:kube-system:deployment-controller")
    assert response["allowed"] is True and "patch" not in response


# allow-preemption.
def test_allow_preemption_from_priority_class(rules):
    denied = pod(priority_class="no-preempt")
    assert annotations_of(patched(denied, rules.mutate(denied)))[c.ANNOTATION_ALLOW_PREEMPTION] == "false"
    plain = pod(priority_class="plain")
    assert annotations_of(patched(plain, rules.mutate(plain)))[c.ANNOTATION_ALLOW_PREEMPTION] == "true"
    assert annotations_of(patched(pod(), rules.mutate(pod())))[c.ANNOTATION_ALLOW_PREEMPTION] == "true"


def test_allow_preemption_already_set_is_kept(rules):
    original = pod(priority_class="plain", annotations={c.ANNOTATION_ALLOW_PREEMPTION: "false"})
    assert annotations_of(patched(original, rules.mutate(original)))[c.ANNOTATION_ALLOW_PREEMPTION] == "false"


def test_priority_class_added_later_is_followed(rules):
    from kubernetes import client

    from tests.waiting import wait_for

    client.SchedulingV1Api(rules.api_client).create_priority_class(
        {"metadata": {"name": "late", "annotations": {c.ANNOTATION_ALLOW_PREEMPTION: "false"}}, "value": 5})
    late = pod(priority_class="late")
    wait_for(lambda: annotations_of(patched(late, rules.mutate(late)))[c.ANNOTATION_ALLOW_PREEMPTION] == "false",
             timeout=10, message="the new priority class to be seen")


# Which pods and namespaces are processed.
def test_yunikorn_own_pods_are_unchanged(rules):
    response = rules.mutate(pod(labels={"app": "yunikorn"}))
    assert response["allowed"] is True and "patch" not in response


def test_kube_system_is_bypassed_by_default(rules):
    response = rules.mutate(pod(), namespace="kube-system")
    assert response["allowed"] is True and "patch" not in response


def test_namespace_annotation_disables_processing(rules):
    response = rules.mutate(pod(), namespace="ns-disabled")
    assert response["allowed"] is True and "patch" not in response


def test_process_namespaces_and_enable_annotation(rules, configured):
    configured({"admissionController.filtering.processNamespaces": "^team-"})
    assert "patch" not in rules.mutate(pod(), namespace="other")
    assert patched(pod(), rules.mutate(pod(), namespace="team-a"))["spec"]["schedulerName"] == "yunikorn"
    assert patched(pod(), rules.mutate(pod(), namespace="ns-enabled"))["spec"]["schedulerName"] == "yunikorn"


def test_bypass_namespaces_regex(rules, configured):
    configured({"admissionController.filtering.bypassNamespaces": "^kube-system$,^infra-"})
    assert "patch" not in rules.mutate(pod(), namespace="infra-logging")
    assert "patch" in rules.mutate(pod(), namespace="apps")


def test_namespace_annotated_later_is_followed(rules):
    from tests.waiting import wait_for

    rules.sim.create_namespace("ns-late", {c.ANNOTATION_ENABLE_YUNIKORN: "false"})
    wait_for(lambda: "patch" not in rules.mutate(pod(), namespace="ns-late"), timeout=10,
             message="the new namespace's annotation to be seen")


def test_informers_survive_dropped_and_expired_watches(rules):
    from tests.waiting import wait_for

    rules.sim.faults.gone_next_watches(count=1, resource="namespaces")
    rules.sim.faults.drop_watches()
    rules.sim.create_namespace("ns-after-drop", {c.ANNOTATION_ENABLE_YUNIKORN: "false"})
    wait_for(lambda: "patch" not in rules.mutate(pod(), namespace="ns-after-drop"), timeout=15,
             message="a change made while the watches were broken to be seen")


def test_generate_app_id_annotation_false_adds_no_labels(rules):
    result = patched(pod(), rules.mutate(pod(), namespace="ns-nolabel"))
    assert result["spec"]["schedulerName"] == "yunikorn"
    assert labels_of(result) == {} and user_info(result)["user"] == "alice"


def test_label_and_no_label_namespaces(rules, configured):
    configured({"admissionController.filtering.labelNamespaces": "^lab-",
                "admissionController.filtering.noLabelNamespaces": "^lab-quiet$"})
    labelled = patched(pod(), rules.mutate(pod(), namespace="lab-1"))
    assert LABEL_APPLICATION_ID in labels_of(labelled)
    assert annotations_of(labelled)[c.ANNOTATION_ALLOW_PREEMPTION] == "true"
    for namespace in ("lab-quiet", "prod"):
        quiet = patched(pod(), rules.mutate(pod(), namespace=namespace))
        assert labels_of(quiet) == {} and quiet["spec"]["schedulerName"] == "yunikorn"
        assert set(annotations_of(quiet)) == {ANNOTATION_USER_INFO}, namespace  # no allow-preemption either


def test_bad_regex_keeps_that_keys_default(rules, configured):
    configured({"admissionController.filtering.bypassNamespaces": "^kube-system$,([unclosed",
                "admissionController.filtering.defaultQueue": "root.other"})
    assert "patch" not in rules.mutate(pod(), namespace="kube-system")  # default still bypasses kube-system
    assert labels_of(patched(pod(), rules.mutate(pod())))[LABEL_QUEUE_LEGACY] == "root.other"
    assert "admissionController.filtering.bypassNamespaces" in rules.controller.log()


def test_other_kinds_are_allowed_unchanged(rules):
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}
    response = rules.mutate(service, kind="Service")
    assert response["allowed"] is True and "patch" not in response


def test_response_echoes_the_request_uid(rules):
    body = review(pod())
    assert rules.client.review(c.MUTATE_PATH, body)["uid"] == body["request"]["uid"]


# Bad input.
def test_empty_body_is_400(rules):
    status, _ = rules.client.request("POST", c.MUTATE_PATH, b"", {"Content-Type": "application/json"})
    assert status == 400


def test_wrong_content_type_is_415(rules):
    status, _ = rules.client.request("POST", c.MUTATE_PATH, b"{}", {"Content-Type": "text/plain"})
    assert status == 415


def test_body_over_3_mib_is_413(rules):
    """Refused from the declared length, before the body is read (so a client may stop sending)."""
    connection = rules.client._connect()
    try:
        connection.putrequest("POST", c.MUTATE_PATH)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(3 * 1024 * 1024 + 1))
        connection.endheaders(b'{"request":')
        assert connection.getresponse().status == 413
    finally:
        connection.close()


@pytest.mark.parametrize("body", [b"not json", b"[1,2]", b'{"request":null}', b'{"request":{"userInfo":3}}'])
def test_undecodable_review_is_denied_with_a_message(rules, body):
    status, raw = rules.client.request("POST", c.MUTATE_PATH, body, {"Content-Type": "application/json"})
    assert status == 200
    import json
    response = json.loads(raw)["response"]
    assert response["allowed"] is False and response["status"]["message"] == "body decode failed"


def test_pod_that_is_not_an_object_is_denied_not_500(rules):
    response = rules.client.review(c.MUTATE_PATH, review("a string"))  # type: ignore[arg-type]
    assert response["allowed"] is False and response["status"]["message"]


def test_health(rules):
    assert rules.client.get("/health") == (200, b"OK\r\n")


# The shim reads the application and queue the webhook writes, and finds the same ones in a pod the
# webhook never saw (created before it ran, or in a namespace it skips).
@pytest.mark.parametrize("labels, annotations, namespace", [
    ({}, {}, "n" * 63),  # the generated id is cut to a label value's 63 characters on both sides
    ({LABEL_APPLICATION_ID: "legacy", LABEL_APP_ID: "canonical"}, {}, "default"),
    ({LABEL_SPARK_APP_SELECTOR: "spark-1"}, {LABEL_APP_ID: "annotated"}, "default"),
    ({LABEL_QUEUE_LEGACY: "root.legacy", LABEL_QUEUE: "root.canonical"}, {}, "default"),
    ({}, {ANNOTATION_QUEUE: "root.annotated"}, "default"),
])
def test_the_shim_and_the_webhook_agree_on_application_and_queue(rules, labels, annotations, namespace):
    original = pod(labels=labels, annotations=annotations)
    original["metadata"].update(namespace=namespace, uid="uid-1")
    as_submitted = parse_pod(original)
    as_admitted = parse_pod(patched(original, rules.mutate(original, namespace=namespace)))
    assert as_admitted.app_id == as_submitted.app_id
    assert len(as_admitted.app_id) <= 63
    if as_submitted.queue:
        assert as_admitted.queue == as_submitted.queue
