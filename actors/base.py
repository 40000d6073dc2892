"""Conventions every yunikorn-py actor follows.

- **Messages** are SI protobuf messages or small frozen dataclasses declared with :func:`message`;
  never bare dicts, so every boundary has a named, typed, immutable shape.
- **Actors** derive from :class:`Actor` (a pykka ``ThreadingActor``) or, when there are thousands of
  them, :class:`PooledActor` (run on a shared dispatcher), and handle ``Msg`` in ``on_Msg``; the
  messages of each side are listed in one module (``actors.shim.messages``, ``actors.core.messages``).
  Failures are reported with the actor's name to the supervisor given at start (a
  :class:`Supervision`, which health checks read), so a crash never silently stops part of the
  scheduler. An actor whose messages carry what tenants write (``contain_failures``) never stops for
  one: the message that raised is dropped and logged, and the actor goes on with the next.
- **Batching**: what handling a message makes an actor tell others (requests for the core, binds,
  events) is collected in a :class:`Batch` per receiver (``self.batch(...)``) and told as one message
  per receiver after the message (``after_message``; an actor may wait for its inbox to empty first).
- **Life cycle**: :func:`stop_all` stops every actor (tests assert none is left; see
  :func:`live_actors`). Start actors with ``SomeActor.start(...)``; stop them with ``ref.stop()``.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import operator
import queue
import reprlib
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import pykka

from actors import dispatch

log = logging.getLogger(__name__)
T = TypeVar("T")


def message(cls: type[T]) -> type[T]:
    """Declare an actor message: a frozen, slotted dataclass (``@message class Tick: now: float``)."""
    return record(cls)


def record(cls: type[T] | None = None, /, *, weakref_slot: bool = False) -> Any:
    """A frozen, slotted dataclass (``weakref_slot``: one an instance can be weakly referred to by).

    A class of plain fields (values with at most a default) gets every method made here without
    compiling one (``_set_through_slots``, ``_frozen_methods``), alike in what it does to the dataclass's:
    the dataclass compiles each for each class, some 0.3 ms a class of the command's start-up. Its
    ``__dataclass_params__`` say not frozen; no dataclass may derive from it. Any other class is the
    dataclass's, with ``_set_through_slots``'s ``__init__`` where its fields allow."""
    if cls is None:
        return lambda declared: record(declared, weakref_slot=weakref_slot)
    if _plain_fields(cls):
        documented = bool(cls.__doc__)
        cls.__doc__ = cls.__doc__ or "undocumented"  # the dataclass would read the signature of no __init__
        declared = dataclasses.dataclass(slots=True, init=False, repr=False, eq=False, weakref_slot=weakref_slot)(cls)
        if not documented:
            declared.__doc__ = _signature_doc(declared)
        _set_through_slots(declared)
        if "__init__" not in declared.__dict__:
            raise TypeError(f"{cls.__qualname__}: its fields need the dataclass's __init__")
        _frozen_methods(declared)
        return declared
    declared = dataclasses.dataclass(frozen=True, slots=True, weakref_slot=weakref_slot)(cls)
    _set_through_slots(declared)
    return declared


def _signature_doc(cls: type) -> str:
    """The docstring the dataclass gives a class without one: its name and its ``__init__``'s signature."""
    return cls.__name__ + str(inspect.Signature([
        inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=f.type,
                          default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(cls)]))


def _plain_fields(cls: type) -> bool:
    """Whether every field of ``cls`` (not yet a dataclass) is a plain value with at most a default, as
    ``_set_through_slots`` takes them: no ``field(...)``, ``InitVar``, ``KW_ONLY``, ``__post_init__`` or
    dataclass base."""
    annotations = cls.__dict__.get("__annotations__", {})
    return (not hasattr(cls, "__post_init__")
            and not any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:])
            and not any(isinstance(value, dataclasses.Field) for value in cls.__dict__.values())
            and not any(marker in str(kind) for kind in annotations.values() for marker in ("InitVar", "KW_ONLY")))


def _frozen_methods(cls: type) -> None:
    """The methods the dataclass gives a frozen slotted class of plain fields (``__eq__``, ``__hash__``,
    ``__repr__``, ``__setattr__`` and ``__delattr__`` refusing with ``FrozenInstanceError``, and the state
    that copies and pickles take), alike in what they do, made from one getter of the fields' values
    rather than compiled for the class (``record``)."""
    names = tuple(field.name for field in dataclasses.fields(cls))
    values: Callable[[Any], tuple] = (
        operator.attrgetter(*names) if len(names) > 1 else
        (lambda self, get=operator.attrgetter(names[0]): (get(self),)) if names else (lambda self: ()))

    def __eq__(self, other):  # noqa: N807 - the dataclass's
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self):  # noqa: N807
        return hash(values(self))

    @reprlib.recursive_repr()
    def __repr__(self):  # noqa: N807
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, values(self), strict=True))
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name, value):  # noqa: N807
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):  # noqa: N807
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self):  # noqa: N807
        return list(values(self))

    def __setstate__(self, state):  # noqa: N807
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    for method in (__eq__, __hash__, __repr__, __setattr__, __delattr__, __getstate__, __setstate__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)


def _set_through_slots(cls: type) -> None:
    """Give a frozen slotted dataclass an ``__init__`` of the same parameters that sets each field through
    its slot's own setter (``slot_setter``). The dataclass's sets each frozen field by name through
    ``object.__setattr__``, about twice the cost (measured: 1.57 against 0.69 us for a message of five
    fields), and messages are made for every pod. A class whose fields need more than their values (a
    factory, ``__post_init__``, keyword-only or not-init fields) keeps the dataclass's.

    It is compiled when the first instance is made (about 0.15 ms): most classes the command defines are
    not made before it schedules, some never."""
    fields = dataclasses.fields(cls)
    if hasattr(cls, "__post_init__") or any(
            not f.init or f.kw_only or f.default_factory is not dataclasses.MISSING for f in fields):
        return

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - replaced by the one it compiles
        init = slot_setter(cls, [f.name for f in fields],
                           {f.name: f.default for f in fields if f.default is not dataclasses.MISSING})
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__


def constructor(cls: type[T]) -> Callable[..., T]:
    """A constructor of the message class ``cls`` taking what ``cls(...)`` takes, filling a draft of its
    slots (``slot_setter``): half the cost of ``cls(...)`` (0.3 us against 0.6 for a view of seven fields),
    for the messages made for every pod a recovery finds."""
    fields = dataclasses.fields(cls)
    return slot_setter(cls, [f.name for f in fields],
                       {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}, new=True)


def slot_setter(cls: type, names: list[str], defaults: dict[str, Any] | None = None,
                new: bool = False, packed: Sequence[str] = ()) -> Callable[..., Any]:
    """A function of parameters ``names`` (``defaults`` for some) that sets each slot of ``cls`` of that
    name through the slot's own setter: an ``__init__(self, ...)``, or with ``new`` a constructor
    ``(...)`` returning a new instance made without ``__init__``. Frozen stays frozen: nothing else can set.
    ``packed``: slots set from one last parameter, ``packed``, a sequence of their values in that order
    (what many instances share, kept as one tuple: passing it unpacked, 24 values a pod's record, cost
    0.26 us a call more).

    A constructor of a class with no base but ``object`` fills a draft first: an instance of a plain
    class with the same slots, which Python sets with plain attribute stores, then made an instance of
    ``cls`` (a class whose slots are laid out alike may be swapped in). Setting 33 slots so took 0.7 us
    against 2.3 through their setters (a pod's record, made for every pod listed)."""
    defaults = defaults or {}
    parameters = [f"{name}=default_{name}" if name in defaults else name for name in names]
    if packed:
        parameters.append("packed")
    draft = _draft(cls) if new else None
    if draft is not None:
        head = f"    def make({', '.join(parameters)}):\n        self = new(draft)\n"
        body = "".join(f"        self.{name} = {name}\n" for name in names)
        if packed:
            body += f"        {', '.join(f'self.{name}' for name in packed)}, = packed\n"
        body += "        self.__class__ = cls\n        return self\n"
        outer = ["new", "cls", "draft", *(f"default_{name}" for name in defaults)]
        values = [object.__new__, cls, draft, *defaults.values()]
    else:
        names = [*names, *packed]
        body = "".join(f"        set_{name}(self, {name})\n" for name in names)
        if packed:
            body = f"        {', '.join(packed)}, = packed\n" + body
        if new:
            head, body = f"    def make({', '.join(parameters)}):\n        self = new(cls)\n", body + "        return self\n"
        else:
            head = f"    def make({', '.join(['self', *parameters])}):\n"
        outer = ["new", "cls", *(f"set_{name}" for name in names), *(f"default_{name}" for name in defaults)]
        values = [object.__new__, cls, *(getattr(cls, name).__set__ for name in names), *defaults.values()]
    namespace: dict = {}
    # The source holds nothing but the names of the class's own slots.
    exec(f"def maker({', '.join(outer)}):\n{head}{body or '        pass'}\n    return make\n", namespace)
    return namespace["maker"](*values)


def _draft(cls: type) -> type | None:
    """A plain class with the slots of ``cls`` (whose instances may become instances of ``cls``), or None
    when ``cls`` derives from more than ``object`` (a base's own slots or ``__setattr__`` would differ)."""
    if cls.__bases__ != (object,) or "__slots__" not in cls.__dict__ or "__dict__" in cls.__dict__:
        return None
    return type(f"{cls.__name__}Draft", (), {"__slots__": cls.__dict__["__slots__"], "__module__": cls.__module__})


@message
class ActorFailed:
    """Sent to a supervisor when an actor's message handler raised."""

    actor: str
    error: str


Supervisor = Callable[[ActorFailed], None]


class Supervision:
    """The supervisor of a process's actors: pass it as ``supervisor`` to every actor started.

    It keeps the first failure of each actor and logs it once, naming the actor; a stopped actor does
    not come back, so :meth:`failures` only grows and a health check built on it fails for good (the
    process must be restarted). Thread-safe: actors fail on their own threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, ActorFailed] = {}

    def __call__(self, failure: ActorFailed) -> None:
        with self._lock:  # logged before it shows in failures(): whoever sees the failure finds its line
            if failure.actor in self._failures:
                return
            log.error("actor %s stopped by a failure: %s", failure.actor, failure.error)
            self._failures[failure.actor] = failure

    def failures(self) -> tuple[ActorFailed, ...]:
        """Every actor that stopped by a failure, in the order they failed."""
        with self._lock:
            return tuple(self._failures.values())


class Batch(Generic[T]):
    """Items for one receiver, collected while an actor handles its messages and told as one message,
    ``wrap(items)``, when the actor flushes: the many small effects of one step reach each receiver at
    once. A ``receiver`` of ``None`` (nobody listens yet, or at all) drops the items."""

    __slots__ = ("receiver", "_wrap", "_items")

    def __init__(self, receiver: pykka.ActorRef | None, wrap: Callable[[tuple[T, ...]], Any]) -> None:
        self.receiver = receiver
        self._wrap = wrap
        self._items: list[T] = []

    def add(self, item: T) -> None:
        self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def undo(self, mark: int) -> None:
        """Withdraw what was added since the batch held ``mark`` items (a step that failed half-way)."""
        del self._items[mark:]

    def flush(self) -> None:
        if not self._items:
            return
        items, self._items = tuple(self._items), []
        if self.receiver is not None:
            tell_if_alive(self.receiver, self._wrap(items))


class _Conventions:
    """Typed dispatch and failure reports, shared by both kinds of actor below.

    ``contain_failures``: an exception of a handler drops its message instead of stopping the actor;
    :meth:`on_dropped` says so (an asker gets ``None``). For the actors that handle one tenant's
    objects, whose failure must stay that object's, never the scheduler's.
    """

    contain_failures: ClassVar[bool] = False

    def __init__(self, supervisor: Supervisor | None = None) -> None:
        super().__init__()
        self._supervisor = supervisor
        self._dropped_kinds: set[str] = set()
        self._batches: list[Batch] = []

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self.actor_urn[-8:]})"

    def on_receive(self, msg: Any) -> Any:
        handler = getattr(self, f"on_{type(msg).__name__}", None)
        if handler is None:
            raise TypeError(f"{self.name} has no handler for {type(msg).__name__}")
        try:
            if not self.contain_failures:
                return handler(msg)
            try:
                return handler(msg)
            except Exception as error:
                self.on_dropped(msg, error)
                return None
        finally:
            if self._batches:  # an actor without batches pays nothing (the dispatcher's hot path)
                self.after_message()

    def batch(self, receiver: pykka.ActorRef | None, wrap: Callable[[tuple[T, ...]], Any]) -> Batch[T]:
        """A :class:`Batch` this actor flushes with the others, in the order they were made."""
        batch = Batch(receiver, wrap)
        self._batches.append(batch)
        return batch

    def flush_batches(self) -> None:
        for batch in self._batches:
            batch.flush()

    def after_message(self) -> None:
        """Runs after each message of an actor with batches, also one that raised: they are told."""
        self.flush_batches()

    def on_dropped(self, msg: Any, error: Exception) -> None:
        """``msg`` raised ``error`` and was dropped: logged with its trace the first time a message of
        its type is, so a poison object sent again and again does not flood the log."""
        kind = type(msg).__name__
        if kind in self._dropped_kinds:
            log.debug("%s dropped a %s: %r", self.name, kind, error)
            return
        self._dropped_kinds.add(kind)
        log.error("%s dropped a %s that failed: %r", self.name, kind, error, exc_info=error)

    def on_failure(self, exception_type, exception_value, traceback) -> None:
        failure = ActorFailed(self.name, repr(exception_value))
        if self._supervisor is None:
            log.error("actor %s stopped by a failure: %s", failure.actor, failure.error)
            return
        try:
            self._supervisor(failure)
        except Exception:  # a broken supervisor must not hide the failure
            log.exception("supervisor of %s failed; the failure was: %s", failure.actor, failure.error)


class Actor(_Conventions, pykka.ThreadingActor):
    """An actor on a thread of its own, for actors that wait (network I/O, timers) or are few.

    ``tell(Msg(...))`` runs ``on_Msg(msg)``. An exception from an ``ask`` goes back to the asker (as
    pykka does); one from a ``tell`` stops the actor, as pykka does, and :meth:`on_failure` reports it
    with the actor's name to ``supervisor``, so a crash is always visible (logs, health, REST).
    """

    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> queue.SimpleQueue:
        # pykka's default, queue.Queue, runs a Python lock and condition per put and get; SimpleQueue
        # does both in C (the loop needs only put, get and empty), a third of a tell's CPU time.
        return queue.SimpleQueue()


class PooledActor(_Conventions, dispatch.PooledActor):
    """An actor with the same conventions run on a shared :class:`~actors.dispatch.Dispatcher`, for
    the thousands of node and application actors; its handlers must not block."""


def tell_if_alive(ref: pykka.ActorRef, message: Any) -> bool:
    """Tell ``message``; ``False`` (and a debug line) when the receiver has stopped, as every actor does
    at shutdown: a message for a stopped actor has nobody left to act on it."""
    try:
        ref.tell(message)
    except pykka.ActorDeadError:
        log.debug("%s dropped: its receiver stopped", type(message).__name__)
        return False
    return True


def live_actors() -> list[pykka.ActorRef]:
    return list(pykka.ActorRegistry.get_all())


def stop_all(timeout: float = 10.0) -> None:
    """Stop every running actor (last started first) and wait for each."""
    pykka.ActorRegistry.stop_all(block=True, timeout=timeout)
