"""What the pooled actors rely on in pykka (see ``actors.dispatch``), pinned against the installed pykka.

The dispatcher replaces only pykka's extension points for new actor types and runs pykka's own loop
over a mailbox whose ``get`` raises to end an actor's turn. These tests drive pykka's loop methods on an
actor with a plain inbox, so a pykka release that changes them fails here, not in production.
"""

import threading

import pykka
import pytest


class TurnOver(Exception):
    pass


class ListInbox:
    """An inbox of queued envelopes whose ``get`` raises when none is left, as the pooled mailbox does."""

    def __init__(self):
        self.items = []

    def put(self, envelope, /):
        self.items.append(envelope)

    def get(self):
        if not self.items:
            raise TurnOver
        return self.items.pop(0)

    def empty(self):
        return not self.items


class Manual(pykka.Actor):
    """A pykka actor whose loop nobody runs: the test calls pykka's loop methods itself."""

    def __init__(self):
        super().__init__()
        self.seen = []
        self.failures = []

    def _create_actor_inbox(self):
        return ListInbox()

    @staticmethod
    def _create_future():
        return pykka.ThreadingFuture()

    def _start_actor_loop(self):
        pass

    def on_receive(self, message):
        if message == "boom":
            raise RuntimeError("boom")
        self.seen.append(message)
        return message.upper()

    def on_failure(self, exception_type, exception_value, traceback):
        self.failures.append(exception_value)


@pytest.fixture
def actor():
    manual = Manual()
    pykka.ActorRegistry.register(manual.actor_ref)  # what start() does before _start_actor_loop
    yield manual
    pykka.ActorRegistry.unregister(manual.actor_ref)


def test_the_extension_points_are_pykkas_hooks_for_new_actor_types():
    for name in ("_create_actor_inbox", "_create_future", "_start_actor_loop"):
        assert name in pykka.Actor.__abstractmethods__
    for name in ("_actor_loop_setup", "_actor_loop_running", "_actor_loop_teardown", "_handle_receive"):
        assert callable(getattr(pykka.Actor, name))


def test_start_registers_the_actor_and_calls_start_actor_loop_once():
    started = threading.Event()

    class Starting(Manual):
        def _start_actor_loop(self):
            assert pykka.ActorRegistry.get_by_urn(self.actor_urn) is self.actor_ref
            started.set()

    ref = Starting.start()
    try:
        assert started.is_set()
    finally:
        pykka.ActorRegistry.unregister(ref)


def test_an_exception_from_the_inboxs_get_ends_the_loop_after_the_messages_before(actor):
    ref = actor.actor_ref
    ref.tell("a")
    answer = ref.ask("b", block=False)
    with pytest.raises(TurnOver):
        actor._actor_loop_running()
    assert actor.seen == ["a", "b"]
    assert answer.get(timeout=0) == "B"
    assert not actor.actor_stopped.is_set()


def test_the_loop_sends_an_asks_exception_to_the_asker_and_a_tells_to_on_failure(actor):
    ref = actor.actor_ref
    asked = ref.ask("boom", block=False)
    ref.tell("boom")
    actor._actor_loop_running()  # returns: the tell's failure stopped the actor
    with pytest.raises(RuntimeError, match="boom"):
        asked.get(timeout=0)
    assert [str(e) for e in actor.failures] == ["boom"]
    assert actor.actor_stopped.is_set()
    assert ref not in pykka.ActorRegistry.get_all()


def test_a_stop_ends_the_loop_and_teardown_answers_what_was_queued_after_it(actor):
    ref = actor.actor_ref
    stopping = ref.ask(pykka.messages._ActorStop(), block=False)  # what ref.stop() sends
    after = ref.ask("late", block=False)
    second_stop = ref.ask(pykka.messages._ActorStop(), block=False)
    actor._actor_loop_running()  # returns: the actor is stopped
    assert stopping.get(timeout=0) is None
    assert actor.actor_stopped.is_set() and actor.seen == []
    actor._actor_loop_teardown()
    with pytest.raises(pykka.ActorDeadError):
        after.get(timeout=0)
    assert second_stop.get(timeout=0) is None
    assert actor.actor_inbox.empty()
    with pytest.raises(pykka.ActorDeadError):
        ref.tell("too late")  # a stopped actor's ref refuses before the inbox is reached


def test_a_failing_on_start_stops_the_actor_before_its_loop():
    class FailingStart(Manual):
        def on_start(self):
            raise RuntimeError("no start")

    failing = FailingStart()
    pykka.ActorRegistry.register(failing.actor_ref)
    failing._actor_loop_setup()
    assert failing.actor_stopped.is_set()
    assert failing.actor_ref not in pykka.ActorRegistry.get_all()


def test_a_thread_actor_on_a_simple_queue_keeps_pykkas_order_stop_and_dead_letters():
    """``actors.base.Actor`` gives pykka's thread loop a ``queue.SimpleQueue`` inbox (put, get and
    empty are all the loop uses): messages in order, a stop after those queued before it, and an ask
    queued behind the stop answered with ``ActorDeadError``."""
    import queue

    from actors.base import Actor, message

    @message
    class Hold:
        until: threading.Event

    @message
    class Note:
        text: str

    class Keeper(Actor):
        def __init__(self):
            super().__init__()
            self.notes = []

        def on_Hold(self, msg):
            msg.until.wait(10)

        def on_Note(self, msg):
            self.notes.append(msg.text)
            return list(self.notes)

    ref = Keeper.start()
    assert isinstance(ref.actor_inbox, queue.SimpleQueue)
    release = threading.Event()
    ref.tell(Hold(release))
    ref.tell(Note("a"))
    answer = ref.ask(Note("b"), block=False)
    stopped = ref.stop(block=False)
    late = ref.ask(Note("late"), block=False)
    release.set()
    assert answer.get(timeout=10) == ["a", "b"]
    stopped.get(timeout=10)
    with pytest.raises(pykka.ActorDeadError):
        late.get(timeout=10)
    assert ref.actor_inbox.empty()
