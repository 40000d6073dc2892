"""The actor conventions: typed messages, dispatch, failure reports, no leaked actors."""

import copy
import dataclasses
import pickle
import sys
import threading
import weakref

import pytest

from actors.base import (
    Actor,
    ActorFailed,
    Supervision,
    constructor,
    live_actors,
    message,
    record,
    slot_setter,
)
from tests.waiting import wait_for


@message
class Add:
    amount: int


@message
class Total:
    pass


@message
class Explode:
    pass


class Counter(Actor):
    def __init__(self, supervisor=None):
        super().__init__(supervisor)
        self.total = 0

    def on_Add(self, msg):
        self.total += msg.amount

    def on_Total(self, msg):
        return self.total

    def on_Explode(self, msg):
        raise RuntimeError("boom")


def test_messages_are_frozen_slotted_dataclasses():
    msg = Add(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.amount = 4
    assert not hasattr(msg, "__dict__")


def test_typed_dispatch_tell_then_ask():
    ref = Counter.start()
    for amount in (1, 2, 3):
        ref.tell(Add(amount))
    assert ref.ask(Total()) == 6
    with pytest.raises(TypeError, match="no handler for dict"):
        ref.ask({"bare": "dict"})
    ref.stop()


def test_a_failed_tell_is_reported_to_the_supervisor():
    reports = []
    reported = threading.Event()

    def supervisor(failure):
        reports.append(failure)
        reported.set()

    ref = Counter.start(supervisor)
    ref.tell(Explode())
    assert reported.wait(5)
    assert isinstance(reports[0], ActorFailed) and "boom" in reports[0].error
    assert reports[0].actor.startswith("Counter(")
    assert not ref.is_alive()


def test_an_ask_failure_goes_back_to_the_asker():
    ref = Counter.start()
    with pytest.raises(RuntimeError, match="boom"):
        ref.ask(Explode())
    assert ref.is_alive()
    ref.stop()
    assert live_actors() == []


def test_supervision_keeps_and_logs_each_actors_first_failure_once(caplog):
    supervision = Supervision()
    refs = [Counter.start(supervision) for _ in range(8)]
    names = [ref.proxy().name.get() for ref in refs]
    for ref in refs:  # from eight threads at once
        ref.tell(Explode())
    wait_for(lambda: len(supervision.failures()) == 8, timeout=5, message="eight failures")
    supervision(ActorFailed(names[0], "a second report of the same actor"))

    assert sorted(f.actor for f in supervision.failures()) == sorted(names)
    assert all("boom" in f.error for f in supervision.failures())
    for name in names:
        assert [r.levelname for r in caplog.records if name in r.getMessage()] == ["ERROR"]


@message
class Received:
    items: tuple


@message
class Step:
    items: tuple
    fail_after: int = -1  # raise once this many items were added (-1: never)


class Collector(Actor):
    def __init__(self):
        super().__init__()
        self.received = []

    def on_Received(self, msg):
        self.received.append(msg.items)

    def on_Total(self, msg):
        return list(self.received)


class Stepper(Actor):
    """Adds each item of a step to a batch for the collector; a step may fail half-way."""

    contain_failures = True

    def __init__(self, collector, silent_batch=False):
        super().__init__()
        self.out = self.batch(collector, Received)
        self.nowhere = self.batch(None, Received) if silent_batch else None

    def on_Step(self, msg):
        mark = len(self.out)
        try:
            for i, item in enumerate(msg.items):
                if i == msg.fail_after:
                    raise ValueError("half-way")
                self.out.add(item)
                if self.nowhere is not None:
                    self.nowhere.add(item)
        except ValueError:
            self.out.undo(mark)
            raise


def test_a_batch_is_told_as_one_message_after_each_message_and_a_failed_steps_items_are_withdrawn():
    collector = Collector.start()
    stepper = Stepper.start(collector, silent_batch=True)
    try:
        stepper.tell(Step((1, 2, 3)))
        stepper.tell(Step((4, 5), fail_after=1))  # dropped (contained): its 4 is withdrawn
        stepper.tell(Step(()))  # nothing collected: nothing told
        stepper.ask(Step((6,)))
        wait_for(lambda: len(collector.ask(Total())) == 2, timeout=5, message="both batches told")
        assert collector.ask(Total()) == [(1, 2, 3), (6,)]
    finally:
        stepper.stop()
        collector.stop()


@message
class Placed:
    name: str
    node: str = "nowhere"
    count: int = 0


@message
class Explained:
    """A message of plain fields with a docstring: ``message`` makes its methods itself."""

    name: str
    node: str = "nowhere"
    count: int = 0


@record(weakref_slot=True)
class Watched:
    name: str
    size: int = 1


@message
class Grouped:
    names: tuple = ()
    extra: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "names", tuple(self.names))


def test_a_message_is_made_as_its_dataclass_would_make_it():
    assert Placed("p") == Placed(name="p", node="nowhere", count=0)
    assert Placed("p", count=2) == Placed("p", "nowhere", 2) != Placed("p", "n1", 2)
    assert (Placed("p", "n1").node, repr(Placed("p"))) == ("n1", "Placed(name='p', node='nowhere', count=0)")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        Placed()
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Placed("p", colour="red")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Placed("p").node = "n2"
    assert hash(Placed("p", "n1")) == hash(Placed("p", "n1"))
    # A factory and a __post_init__ are the dataclass's to run.
    assert Grouped(["a"]) == Grouped(("a",), []) and Grouped().extra is not Grouped().extra


def _declared_records() -> list[type]:
    """Every class of the modules the command imports (and the REST's) whose methods ``record`` made itself."""
    import actors.cli  # noqa: F401 - the command's modules, all of them
    import rest.app  # noqa: F401

    found = sorted({value for name, module in list(sys.modules.items()) if module is not None
                    and name.split(".")[0] in ("actors", "rest") for value in vars(module).values()
                    if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)
                    and getattr(value.__eq__, "__code__", None) is ActorFailed.__eq__.__code__},
                   key=lambda cls: (cls.__module__, cls.__qualname__))
    assert len(found) > 100
    return [*found, Add, Total, Placed, Explained, Watched]


def _twin(cls: type) -> type:
    """``cls`` as the dataclass alone declares it (the docstring it makes of the signature, where none was written)."""
    written = None if cls.__doc__.startswith(f"{cls.__name__}(") else cls.__doc__
    namespace = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}, "__doc__": written,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    namespace.update((f.name, f.default) for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING)
    weakref = cls.__weakrefoffset__ != 0
    return dataclasses.dataclass(frozen=True, slots=True, weakref_slot=weakref)(type(cls.__name__, (), namespace))


@pytest.mark.parametrize("cls", _declared_records(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_record_compares_hashes_and_shows_as_its_dataclass_would(cls):
    twin = _twin(cls)
    assert cls.__weakrefoffset__ == twin.__weakrefoffset__ and cls.__slots__ == twin.__slots__
    names = [f.name for f in dataclasses.fields(cls)]
    assert names == [f.name for f in dataclasses.fields(twin)] and cls.__match_args__ == twin.__match_args__
    assert cls.__doc__ == twin.__doc__
    values = {name: (index, f"v{index}") for index, name in enumerate(names)}
    made, reference = cls(**values), twin(**values)
    assert (repr(made), hash(made)) == (repr(reference), hash(reference))
    assert made == cls(**values) and not made != cls(**values)
    assert made != reference and reference != made  # another class, even of the same fields
    for name in names:
        other = cls(**{**values, name: "changed"})
        assert (made == other, hash(made) == hash(other)) == (False, False)
        assert repr(other) == repr(twin(**{**values, name: "changed"}))
    for name in names:
        for change in (lambda value, name=name: setattr(value, name, 1), lambda value, name=name: delattr(value, name)):
            with pytest.raises(dataclasses.FrozenInstanceError) as refused:
                change(made)
            with pytest.raises(dataclasses.FrozenInstanceError) as reference_refused:
                change(reference)
            assert str(refused.value) == str(reference_refused.value)
        assert getattr(made, name) == values[name]
    for copied in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(copied) is cls and copied == made and repr(copied) == repr(made)


def test_a_record_with_a_weakref_slot_is_weakly_referred_to_and_undocumented_shows_its_signature():
    watched = Watched("w")
    assert weakref.ref(watched)() is watched and not hasattr(watched, "__dict__")
    assert Watched.__doc__ == "Watched(name: str, size: int = 1)" == _twin(Watched).__doc__
    assert dataclasses.replace(watched, size=2) == Watched("w", 2)


def test_a_records_first_instance_is_made_or_refused_as_every_other():
    """Its ``__init__`` is compiled when the first instance is made, even one its arguments refuse."""
    @record
    class Fresh:
        """Never made before."""

        name: str
        size: int = 1

    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        Fresh()
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Fresh("f", colour="red")
    first, second = Fresh("f"), Fresh(name="f", size=1)
    assert first == second and (first.name, first.size) == ("f", 1) and Fresh.__init__ is Fresh("g").__init__.__func__


def test_a_message_that_holds_itself_shows_as_its_dataclass_would():
    held = []
    looped, twin = Explained("p", held, 1), _twin(Explained)("p", held, 1)
    held.append(looped)
    assert repr(looped) == "Explained(name='p', node=[...], count=1)"
    held[0] = twin
    assert repr(twin) == "Explained(name='p', node=[...], count=1)"


@dataclasses.dataclass(frozen=True, slots=True)
class Sized:
    name: str
    size: int = 1


@dataclasses.dataclass(frozen=True, slots=True)
class Labelled(Sized):
    label: str = ""


@pytest.mark.parametrize(("cls", "names"), [(Sized, ["name", "size"]), (Labelled, ["name", "size", "label"])])
def test_a_constructor_of_slots_makes_what_the_dataclass_makes_and_as_frozen(cls, names):
    """A class of no base but object is made from a draft of its slots; one with a base (whose slots and
    frozen setter the draft would not share) through each slot's setter: the same instances either way."""
    make = slot_setter(cls, names, {"size": 1, "label": ""}, new=True)
    made = make("a") if cls is Sized else make("a", label="x")
    assert type(made) is cls
    assert made == (cls("a") if cls is Sized else cls("a", label="x"))
    assert (made.name, made.size, repr(made).startswith(cls.__name__)) == ("a", 1, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.size = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.name
    assert not hasattr(made, "__dict__")


@pytest.mark.parametrize("cls", [Sized, Labelled])
def test_slots_given_packed_are_set_from_one_sequence_of_their_values(cls):
    packed = [field.name for field in dataclasses.fields(cls)][1:]
    values = (2, "x")[:len(packed)]
    made = slot_setter(cls, ["name"], new=True, packed=packed)("a", values)
    assert type(made) is cls and made == cls("a", *values)
    with pytest.raises(ValueError, match="not enough values"):
        slot_setter(cls, ["name"], new=True, packed=packed)("a", ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.size = 3


def test_a_message_constructor_takes_what_the_message_class_takes():
    make = constructor(Placed)
    assert make("p") == Placed("p") and type(make("p")) is Placed
    assert make("p", "n1", count=2) == Placed("p", "n1", 2)
    assert hash(make("p", "n1")) == hash(Placed("p", "n1"))
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        make()
    with pytest.raises(dataclasses.FrozenInstanceError):
        make("p").node = "n2"
