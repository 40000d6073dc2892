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
    """RFC 7386 merge patch; with ``strategic``, known keyed lists merge by key and the directives kubectl
    sends are followed: ``$patch`` (replace, delete), ``$retainKeys``, ``$setElementOrder/<list>`` and
    ``$deleteFromPrimitiveList/<list>``."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if strategic and patch.get("$patch") == "replace":
        return {key: copy.deepcopy(value) for key, value in patch.items() if key != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    later = []  # list directives, applied once the lists they name are merged
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if strategic and key.startswith(("$setElementOrder/", "$deleteFromPrimitiveList/")):
            later.append((key, value))
        elif value is None or (strategic and isinstance(value, dict) and value.get("$patch") == "delete"):
            result.pop(key, None)
        elif strategic and isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, _MERGE_KEYS[key])
        else:
            result[key] = merge_patch(result.get(key), value, strategic)
    for directive, values in later:
        name = directive.split("/", 1)[1]
        if isinstance(result.get(name), list) and isinstance(values, list):
            if directive.startswith("$setElementOrder/"):
                result[name] = _in_order(result[name], values, _MERGE_KEYS.get(name))
            else:
                result[name] = [item for item in result[name] if item not in values]
    if strategic and isinstance(patch.get("$retainKeys"), list):
        result = {key: value for key, value in result.items() if key in patch["$retainKeys"]}
    return result


def _merge_list(current: list, patch: list, key: str | None) -> list:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [item for item in patch if not (isinstance(item, dict) and item.get("$patch") == "replace")]
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


def _in_order(items: list, order: list, key: str | None) -> list:
    """``items`` with those named in ``order`` first, in that order (``$setElementOrder``)."""
    identity = (lambda item: item) if key is None else (lambda item: item.get(key) if isinstance(item, dict) else item)
    wanted = [identity(entry) for entry in order]
    rank = {value: i for i, value in enumerate(wanted) if isinstance(value, (str, int, float, bool))}
    return sorted(items, key=lambda item: rank.get(identity(item), len(rank)))


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
