"""The OpenAPI documents of the kinds kubesim serves: ``/openapi/v3`` (an index, then one OpenAPI 3 document
per group version) and ``/openapi/v2`` (one Swagger 2.0 document, JSON only).

kubectl reads them to decide how to validate and to explain. Each PATCH operation carries the
``fieldValidation`` query parameter and the kind's ``x-kubernetes-group-version-kind``, which tells
kubectl that the server validates fields itself (``?fieldValidation=Strict``), so it skips client-side
validation. Schemas name the top-level fields of each kind (``kubectl explain pods.spec`` finds them)
and keep everything below permissive (``x-kubernetes-preserve-unknown-fields``). PATCH advertises JSON
and merge patches but not strategic merge: kubectl then computes its strategic merge patches from its
own built-in types, which know every list's merge key, rather than from these permissive schemas.
"""

from __future__ import annotations

import hashlib
from functools import cache

import orjson

from kubesim import patch
from kubesim.resources import KINDS, Kind

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_VERSION = "v1.34.0"
_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}


def _field(type_: str, description: str, **more) -> dict:
    return {"type": type_, "description": description, **more}


def _object(description: str) -> dict:
    return {**_OPEN, "description": description}


_SPEC_STATUS = {"spec": _object("The desired behaviour of the object."),
                "status": _object("The most recently observed status of the object.")}
# The top-level fields of each kind besides apiVersion, kind and metadata.
_FIELDS: dict[str, dict[str, dict]] = {
    "pods": _SPEC_STATUS, "nodes": _SPEC_STATUS, "namespaces": _SPEC_STATUS, "services": _SPEC_STATUS, "jobs": _SPEC_STATUS,
    "deployments": _SPEC_STATUS, "replicasets": _SPEC_STATUS, "statefulsets": _SPEC_STATUS, "daemonsets": _SPEC_STATUS,
    "cronjobs": _SPEC_STATUS, "selfsubjectaccessreviews": _SPEC_STATUS,
    "poddisruptionbudgets": _SPEC_STATUS, "persistentvolumeclaims": _SPEC_STATUS, "persistentvolumes": _SPEC_STATUS,
    "storageclasses": {"provisioner": _field("string", "The volume plugin that provisions volumes of this class."),
                       "volumeBindingMode": _field("string", "Immediate or WaitForFirstConsumer."),
                       "allowedTopologies": {"type": "array", "items": _OPEN,
                                             "description": "Where volumes of this class may be provisioned."},
                       "parameters": {**_STRING_MAP, "description": "Parameters for the provisioner."},
                       "reclaimPolicy": _field("string", "Delete or Retain."),
                       "allowVolumeExpansion": _field("boolean", "Whether claims of this class may grow."),
                       "mountOptions": {"type": "array", "items": {"type": "string"},
                                        "description": "Mount options of the class's volumes."}},
    "leases": {"spec": _object("The specification of the lease.")},
    "configmaps": {"data": {**_STRING_MAP, "description": "The configuration data."},
                   "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"},
                                  "description": "Binary configuration data."},
                   "immutable": _field("boolean", "Whether the data may no longer change.")},
    "secrets": {"data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"},
                         "description": "The secret data, base64 encoded."},
                "stringData": {**_STRING_MAP, "description": "Secret data as plain strings, merged into data."},
                "type": _field("string", "The type of the secret, e.g. Opaque."),
                "immutable": _field("boolean", "Whether the data may no longer change.")},
    "events": {"involvedObject": _object("The object this event is about."),
               "reason": _field("string", "Why the event happened, in a short CamelCase word."),
               "message": _field("string", "A human-readable description of the event."),
               "source": _object("The component reporting this event."),
               "firstTimestamp": _field("string", "When the event was first recorded.", format="date-time"),
               "lastTimestamp": _field("string", "When the event last happened.", format="date-time"),
               "count": _field("integer", "How often the event has happened.", format="int32"),
               "type": _field("string", "Normal or Warning."),
               "eventTime": _field("string", "When the event first happened.", format="date-time"),
               "series": _object("Data about the series of events this one belongs to."),
               "action": _field("string", "What action was taken or failed."),
               "related": _object("A secondary object of the event."),
               "reportingComponent": _field("string", "The controller that emitted the event."),
               "reportingInstance": _field("string", "The instance of the controller that emitted it.")},
    "roles": {"rules": {"type": "array", "items": _OPEN, "description": "What the role allows."}},
    "clusterroles": {"rules": {"type": "array", "items": _OPEN, "description": "What the role allows."},
                     "aggregationRule": _object("Which ClusterRoles' rules to aggregate (not played).")},
    "rolebindings": {"subjects": {"type": "array", "items": _OPEN, "description": "Who is granted the role."},
                     "roleRef": _object("The Role or ClusterRole granted.")},
    "clusterrolebindings": {"subjects": {"type": "array", "items": _OPEN, "description": "Who is granted the role."},
                            "roleRef": _object("The ClusterRole granted.")},
    "serviceaccounts": {"secrets": {"type": "array", "items": _OPEN, "description": "Secrets of the account."},
                        "imagePullSecrets": {"type": "array", "items": _OPEN,
                                             "description": "Secrets for pulling images."},
                        "automountServiceAccountToken": _field("boolean", "Whether pods mount its token.")},
    "priorityclasses": {"value": _field("integer", "The priority of pods of this class.", format="int32"),
                        "globalDefault": _field("boolean", "Whether pods without a class get this one."),
                        "description": _field("string", "When to use this class."),
                        "preemptionPolicy": _field("string", "Never or PreemptLowerPriority.")},
    "mutatingwebhookconfigurations": {"webhooks": {"type": "array", "items": _OPEN,
                                                   "description": "The webhooks and what they act on."}},
    "validatingwebhookconfigurations": {"webhooks": {"type": "array", "items": _OPEN,
                                                     "description": "The webhooks and what they act on."}},
}
_SHARED = {
    "ObjectMeta": {"type": "object", "description": "Metadata that all persisted resources must have.",
                   "properties": {
                       "name": _field("string", "Name must be unique within a namespace."),
                       "generateName": _field("string", "A prefix the server uses to generate a unique name."),
                       "namespace": _field("string", "The namespace the object is in."),
                       "labels": {**_STRING_MAP, "description": "Labels for selecting objects."},
                       "annotations": {**_STRING_MAP, "description": "Arbitrary non-identifying metadata."},
                       "uid": _field("string", "The unique id of the object, set by the server."),
                       "resourceVersion": _field("string", "The version of the object, for concurrency control."),
                       "generation": _field("integer", "The generation of the desired state.", format="int64"),
                       "creationTimestamp": _field("string", "When the object was created.", format="date-time"),
                       "deletionTimestamp": _field("string", "When the object will be deleted.",
                                                   format="date-time"),
                       "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                                      "description": "What must happen before the object is deleted."},
                       "ownerReferences": {"type": "array", "items": _OPEN,
                                           "description": "The objects this one depends on."},
                       "managedFields": {"type": "array", "items": _OPEN,
                                         "description": "Which manager owns which fields."}}},
    "ListMeta": {"type": "object", "description": "Metadata that lists have.",
                 "properties": {"resourceVersion": _field("string", "The version of the list."),
                                "continue": _field("string", "The token for the next page."),
                                "remainingItemCount": _field("integer", "Items after this page.", format="int64")}},
    "Status": {"type": "object", "description": "The result of an operation that returns no object.",
               "properties": {"status": _field("string", "Success or Failure."),
                              "message": _field("string", "What happened."),
                              "reason": _field("string", "Why, in a CamelCase word."),
                              "code": _field("integer", "The HTTP status code.", format="int32"),
                              "details": _OPEN},
               "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}]},
    "Patch": {"type": "object", "description": "A JSON or merge patch."},
}


def _schema_prefix(kind: Kind) -> str:
    """``io.k8s.api.core.v1`` for the core group, ``io.k8s.api.scheduling.v1`` for scheduling.k8s.io."""
    return f"io.k8s.api.{kind.group.split('.')[0] if kind.group else 'core'}.{kind.version}"


def _gvk(kind: Kind, name: str = "") -> dict:
    return {"group": kind.group, "version": kind.version, "kind": name or kind.kind}


def _schemas(kinds: list[Kind], ref: str) -> dict:
    """The component schemas of ``kinds`` and the shared meta types; ``ref`` prefixes every ``$ref``."""
    schemas = {f"{META}.{name}": schema for name, schema in _SHARED.items()}
    for kind in kinds:
        name = f"{_schema_prefix(kind)}.{kind.kind}"
        header = {"apiVersion": _field("string", "The versioned schema of this object."),
                  "kind": _field("string", "The REST resource this object represents.")}
        schemas[name] = {
            "type": "object", "description": f"A {kind.kind} as kubesim stores it.",
            "properties": {**header, "metadata": {"allOf": [{"$ref": f"{ref}{META}.ObjectMeta"}], "default": {},
                                                  "description": "Standard object metadata."},
                           **_FIELDS.get(kind.plural, {})},
            "x-kubernetes-group-version-kind": [_gvk(kind)]}
        schemas[f"{name}List"] = {
            "type": "object", "description": f"A list of {kind.plural}.", "required": ["items"],
            "properties": {**header, "metadata": {"allOf": [{"$ref": f"{ref}{META}.ListMeta"}], "default": {}},
                           "items": {"type": "array", "items": {"$ref": f"{ref}{name}"}}},
            "x-kubernetes-group-version-kind": [_gvk(kind, f"{kind.kind}List")]}
    return schemas


def _query(name: str, type_: str = "string") -> dict:
    return {"name": name, "in": "query", "schema": {"type": type_, "uniqueItems": True}}


_LIST_PARAMS = [_query("labelSelector"), _query("fieldSelector"), _query("limit", "integer"), _query("continue"),
                _query("resourceVersion"), _query("watch", "boolean"), _query("timeoutSeconds", "integer"),
                _query("allowWatchBookmarks", "boolean")]
_WRITE_PARAMS = [_query("dryRun"), _query("fieldManager"), _query("fieldValidation")]
_PATCH_TYPES = (patch.JSON_PATCH, patch.MERGE)


def _operation_id(verb: str, kind: Kind, scope: str) -> str:
    group = "".join(part.capitalize() for part in (kind.group.split(".")[0] if kind.group else "core").split("-"))
    return f"{verb}{group}{kind.version.capitalize()}{scope}{kind.kind}"


class _Paths:
    """Builds the path items of one document: operations in OpenAPI 3 or Swagger 2 form."""

    def __init__(self, v3: bool) -> None:
        self.v3 = v3
        self.ref = "#/components/schemas/" if v3 else "#/definitions/"

    def _body(self, types: tuple[str, ...], schema: str) -> dict:
        if self.v3:
            return {"requestBody": {"required": True, "content": {t: {"schema": {"$ref": self.ref + schema}}
                                                                  for t in types}}}
        return {"consumes": list(types)}

    def _reply(self, schema: str) -> dict:
        if self.v3:
            return {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": self.ref + schema}}}}}
        return {"200": {"description": "OK", "schema": {"$ref": self.ref + schema}}}

    def _parameters(self, params: list[dict], body: str = "") -> list[dict]:
        if self.v3:
            return params
        flat = [{**{k: v for k, v in p.items() if k != "schema"}, **p["schema"]} for p in params]
        return flat + ([{"name": "body", "in": "body", "required": True, "schema": {"$ref": self.ref + body}}]
                       if body else [])

    def operation(self, verb: str, action: str, kind: Kind, scope: str, params: list[dict], reply: str,
                  body: tuple[tuple[str, ...], str] | None = None) -> dict:
        operation = {"operationId": _operation_id(verb, kind, scope), "description": f"{action} {kind.kind}",
                     "parameters": self._parameters(params, body[1] if body else ""), "responses": self._reply(reply),
                     "x-kubernetes-action": action, "x-kubernetes-group-version-kind": _gvk(kind)}
        if body:
            operation.update(self._body(*body))
        return operation

    def of(self, kind: Kind) -> dict:
        name = f"{_schema_prefix(kind)}.{kind.kind}"
        scope = "Namespaced" if kind.namespaced else ""
        base = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
        collection = f"{base}/namespaces/{{namespace}}/{kind.plural}" if kind.namespaced else f"{base}/{kind.plural}"
        in_path = [{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}]
        in_path = self._parameters(in_path if kind.namespaced else [])
        named = self._parameters([{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}])
        json_body = ((("application/json",), name))
        paths = {
            collection: {
                "parameters": in_path,
                "get": self.operation("list", "list", kind, scope, _LIST_PARAMS, f"{name}List"),
                "post": self.operation("create", "post", kind, scope, _WRITE_PARAMS, name, json_body)},
            f"{collection}/{{name}}": {
                "parameters": named + in_path,
                "get": self.operation("read", "get", kind, scope, [], name),
                "put": self.operation("replace", "put", kind, scope, _WRITE_PARAMS, name, json_body),
                "patch": self.operation("patch", "patch", kind, scope, [*_WRITE_PARAMS, _query("force", "boolean")],
                                        name, (_PATCH_TYPES, f"{META}.Patch")),
                "delete": self.operation("delete", "delete", kind, scope, [], f"{META}.Status")}}
        if kind.namespaced:
            paths[f"{base}/{kind.plural}"] = {
                "get": self.operation("list", "list", kind, "", _LIST_PARAMS, f"{name}List")}
            paths[f"{base}/{kind.plural}"]["get"]["operationId"] += "ForAllNamespaces"
        return paths


def _info() -> dict:
    return {"title": "Kubernetes", "version": _VERSION}


def _group_versions() -> dict[str, list[Kind]]:
    """``api/v1`` and ``apis/<group>/<version>``, each with its kinds."""
    found: dict[str, list[Kind]] = {}
    for kind in KINDS:
        found.setdefault(f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}", []).append(kind)
    return found


@cache
def v3_document(group_version: str) -> bytes | None:
    """The OpenAPI 3 document of ``api/v1`` or ``apis/<group>/<version>``, serialized; None if unknown."""
    kinds = _group_versions().get(group_version)
    if kinds is None:
        return None
    paths = _Paths(v3=True)
    document = {"openapi": "3.0.0", "info": _info(),
                "paths": {path: item for kind in kinds for path, item in paths.of(kind).items()},
                "components": {"schemas": _schemas(kinds, paths.ref)}}
    return orjson.dumps(document)


@cache
def v3_index() -> bytes:
    """``GET /openapi/v3``: each group version's document, at a URL that changes with its content."""
    paths = {}
    for group_version in _group_versions():
        digest = hashlib.sha512(v3_document(group_version)).hexdigest().upper()
        paths[group_version] = {"serverRelativeURL": f"/openapi/v3/{group_version}?hash={digest}"}
    return orjson.dumps({"paths": paths})


@cache
def v2_document() -> bytes:
    """``GET /openapi/v2``: every kind in one Swagger 2.0 document."""
    paths = _Paths(v3=False)
    document = {"swagger": "2.0", "info": _info(),
                "paths": {path: item for kind in KINDS for path, item in paths.of(kind).items()},
                "definitions": _schemas(list(KINDS), paths.ref)}
    return orjson.dumps(document)


def answer(path: str) -> bytes | None:
    """The serialized OpenAPI document at ``path``, or None when ``path`` is none of them."""
    path = path.rstrip("/")
    if path == "/openapi/v2":
        return v2_document()
    if path == "/openapi/v3":
        return v3_index()
    if path.startswith("/openapi/v3/"):
        return v3_document(path[len("/openapi/v3/"):])
    return None
