"""YAML from outside (configmaps, ``validate-conf`` bodies) parsed within limits, before anything else.

A document is refused with a :class:`YamlError` when it is longer than :data:`MAX_CHARACTERS`, nests
deeper than :data:`MAX_DEPTH`, or reaches more than :data:`MAX_ALIAS_NODES` nodes through aliases
(500 bytes of nested aliases can stand for a billion nodes that every later walk would visit). The
limits are checked while the document is composed, event by event, so a refused document is never
built: libyaml's own composer recurses in C and crashes the process on ``[[[[...`` 30,000 deep.
A key given twice in one mapping is refused too (YAML would silently keep the last one), and so is an
alias to a node that contains it. Messages are bounded: quoted values are elided.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.resolver import Resolver

from si.bounded import elide, shown

try:  # libyaml's event parser, ten times faster than the pure-Python one (its composer is not used)
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser):
        def __init__(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)

MAX_CHARACTERS = 4 * 2**20
MAX_DEPTH = 100  # a queue level costs two (its mapping and its queues list): about 45 levels of queues
MAX_ALIAS_NODES = 100_000
_LIBYAML_NESTING = "exceeded maximum nesting depth"  # libyaml 0.2.6 and later, at 1,000 levels


class YamlError(ValueError):
    """Text that is not YAML, or YAML beyond the limits; the message is short whatever the input."""


class _BoundedComposer(Composer):
    """PyYAML's composer counting depth and the nodes each alias stands for."""

    def _start_limits(self) -> None:
        self._depth = 0
        self._nodes = 0  # nodes composed so far, an alias counting as every node it stands for
        self._through_aliases = 0
        self._weights: dict[str, int] = {}  # anchor -> nodes its node stands for, once composed

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self.anchors and event.anchor not in self._weights:
                raise YamlError(f"alias *{elide(event.anchor, 60)} refers to a node that contains it"
                                f"{_at(event.start_mark)}")
            weight = self._weights.get(event.anchor, 0)
            self._nodes += weight
            self._through_aliases += weight
            if self._through_aliases > MAX_ALIAS_NODES:
                raise YamlError(f"aliases expand to more than {MAX_ALIAS_NODES} nodes{_at(event.start_mark)}")
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels{_at(event.start_mark)}")
        if event.anchor is not None:
            self._weights.pop(event.anchor, None)  # redefined: a self-reference must not see the old weight
        self._depth += 1
        first = self._nodes
        self._nodes += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._weights[event.anchor] = self._nodes - first
        return node


class _Loader(_BoundedComposer, _Parser, SafeConstructor, Resolver):
    def __init__(self, stream) -> None:
        _Parser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._start_limits()

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *defaults' may be overridden by own keys
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise ConstructorError(None, None, f"duplicate key {shown(key)}", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        if len(node.value) > 100:  # Python refuses to convert more than 4,300 digits anyway
            raise ConstructorError(None, None, f"integer {shown(node.value)} is too long", node.start_mark)
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _at(mark) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def load(text: str) -> Any:
    """The one document in ``text`` as plain Python values; :class:`YamlError` when it is refused."""
    if len(text) > MAX_CHARACTERS:
        raise YamlError(f"longer than {MAX_CHARACTERS} characters ({len(text)})")
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except YamlError:
        raise
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error)
        mark = _at(getattr(error, "problem_mark", None))
        if problem == _LIBYAML_NESTING:  # libyaml reads ahead of the composer and has a limit of its own
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels{mark}") from None
        raise YamlError(f"not valid YAML{mark}: {elide(problem)}") from None
    except (ValueError, TypeError, OverflowError) as error:  # a scalar Python cannot hold, e.g. year 0
        raise YamlError(f"not valid YAML: {elide(str(error))}") from None
    finally:
        loader.dispose()
