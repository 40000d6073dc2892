"""The three patch types a kube-apiserver accepts."""

from __future__ import annotations

import copy

from kubesim.errors import ApiError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

# Lists that strategic merge combines element by element, by this key, instead of replacing.
_MERGE_KEYS = {"containers": "name", "initContainers": "name", "conditions": "type", "env": "name",
               "volumes": "name", "ports": "containerPort", "tolerations": "key", "taints": "key",
               "ownerReferences": "uid", "finalizers": None}


def merge_patch(target, patch, strategic: bool = False):
    """RFC 7386 merge patch; with ``strategic``, known keyed lists merge by key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch":
            continue
        if value is None:
            result.pop(key, None)
        elif strategic and isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, _MERGE_KEYS[key])
        else:
            result[key] = merge_patch(result.get(key), value, strategic)
    return result


def _merge_list(current: list, patch: list, key: str | None) -> list:
    if key is None:  # a set of scalars
        return current + [v for v in patch if v not in current]
    merged = list(current)
    index = {item.get(key): i for i, item in enumerate(merged) if isinstance(item, dict)}
    for item in patch:
        if not isinstance(item, dict):
            continue
        if item.get("$patch") == "delete":
            if item.get(key) in index:
                merged[index[item.get(key)]] = None
            continue
        position = index.get(item.get(key))
        if position is None:
            index[item.get(key)] = len(merged)
            merged.append(item)
        else:
            merged[position] = merge_patch(merged[position], item, True)
    return [item for item in merged if item is not None]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(document, parts: list[str]):
    node = document
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ApiError(422, "Invalid", f"the server rejected our request: path /{'/'.join(parts)} not found")
    return node


def _get(document, parts):
    node = document
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def json_patch(document, operations) -> dict:
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    document = copy.deepcopy(document)
    for operation in operations:
        try:
            op, parts = operation["op"], _pointer(operation["path"])
            if op == "test":
                if _get(document, parts) != operation["value"]:
                    raise ApiError(422, "Invalid", f"the server rejected our request: test failed at {operation['path']}")
                continue
            if op in ("move", "copy"):
                value = copy.deepcopy(_get(document, _pointer(operation["from"])))
                if op == "move":
                    document = _remove(document, _pointer(operation["from"]))
                document = _add(document, parts, value)
            elif op == "add":
                document = _add(document, parts, copy.deepcopy(operation["value"]))
            elif op == "remove":
                document = _remove(document, parts)
            elif op == "replace":
                document = _remove(document, parts)
                document = _add(document, parts, copy.deepcopy(operation["value"]))
            else:
                raise bad_request(f"unknown json patch operation {op!r}")
        except (KeyError, IndexError, ValueError, TypeError) as error:
            raise ApiError(422, "Invalid", f"the server rejected our request: json patch {operation!r} "
                           f"cannot apply: {error!r}") from error
    return document


def _add(document, parts, value):
    if not parts:
        return value
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        parent[last] = value
    return document


def _remove(document, parts):
    parent = _parent(document, parts)
    last = parts[-1]
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
    return document
