"""Pooled actors keep pykka's semantics on a few shared threads: order, one message at a time,
fairness, failures, stop, and the registry."""

import threading

import pykka
import pytest

from actors.base import ActorFailed, PooledActor, message
from actors.dispatch import Dispatcher
from tests.waiting import wait_for


@message
class Note:
    sender: int
    seq: int


@message
class Seen:
    pass


@message
class Hold:
    release: threading.Event


@message
class Explode:
    pass


@pytest.fixture
def pool():
    dispatcher = Dispatcher("test", workers=4, slice_=8)
    yield dispatcher
    pykka.ActorRegistry.stop_all()
    dispatcher.shutdown()


def pooled(pool):
    class Recorder(PooledActor):
        """Records notes; fails the test run if two workers ever run it at once."""

        def __init__(self, trace=None, supervisor=None):
            super().__init__(supervisor)
            self.trace = trace if trace is not None else []
            self.notes = []
            self.inside = threading.Lock()
            self.overlaps = 0

        def on_Note(self, msg):
            if not self.inside.acquire(blocking=False):
                self.overlaps += 1
                return
            try:
                self.notes.append((msg.sender, msg.seq))
                self.trace.append("busy")
            finally:
                self.inside.release()

        def on_Seen(self, msg):
            self.trace.append("idle")
            return list(self.notes), self.overlaps

        def on_Hold(self, msg):
            msg.release.wait(10)
            return "held"

        def on_Explode(self, msg):
            raise RuntimeError("boom")

    Recorder.pool = pool
    return Recorder


def test_mailbox_order_is_kept_per_sender_and_one_message_runs_at_a_time(pool):
    recorders = [pooled(pool).start() for _ in range(20)]
    senders, per_sender = 6, 500

    def send(sender):
        for seq in range(per_sender):
            for ref in recorders:
                ref.tell(Note(sender, seq))

    threads = [threading.Thread(target=send, args=(s,)) for s in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for ref in recorders:
        notes, overlaps = ref.ask(Seen())
        assert overlaps == 0
        assert len(notes) == senders * per_sender
        for sender in range(senders):
            assert [seq for s, seq in notes if s == sender] == list(range(per_sender))


def test_an_idle_actor_waits_at_most_one_slice_behind_a_busy_one():
    single = Dispatcher("fair", workers=1, slice_=4)
    try:
        actor = pooled(single)
        trace = []
        busy, idle = actor.start(trace), actor.start(trace)
        busy.ask(Seen())  # both have had their first turn: the run queue is empty
        idle.ask(Seen())
        trace.clear()
        gate = threading.Event()
        busy.tell(Hold(gate))  # holds the only worker until the backlog and the ask are queued
        for seq in range(1_000):
            busy.tell(Note(0, seq))
        answer = idle.ask(Seen(), block=False)
        gate.set()
        answer.get(timeout=10)
        assert busy.ask(Seen(), timeout=10)[0] == [(0, seq) for seq in range(1_000)]
        # The busy actor's turn was Hold plus three notes; then the idle actor's ask was answered.
        assert trace.index("idle") == 3
    finally:
        pykka.ActorRegistry.stop_all()
        single.shutdown()


def test_2000_actors_run_on_the_dispatchers_threads(pool):
    before = threading.active_count()
    refs = [pooled(pool).start() for _ in range(2_000)]
    for ref in refs:
        ref.tell(Note(0, 1))
    futures = [ref.ask(Seen(), block=False) for ref in refs]
    assert all(f.get(timeout=30)[0] == [(0, 1)] for f in futures)
    assert threading.active_count() <= before  # none started (one an earlier test left may have ended since)
    assert sum(1 for r in pykka.ActorRegistry.get_all() if r.actor_class.__name__ == "Recorder") == 2_000
    # A worker adds its turn to the stats after the turn, so after the answers it handled.
    wait_for(lambda: pool.stats().messages >= 4_000, 5, message="every message counted")
    assert pool.stats().busy_seconds > 0


def test_an_ask_failure_goes_to_the_asker_and_the_actor_lives_on(pool):
    ref = pooled(pool).start()
    with pytest.raises(RuntimeError, match="boom"):
        ref.ask(Explode())
    assert ref.ask(Seen()) == ([], 0)


def test_a_tell_failure_stops_the_actor_reports_it_and_fails_queued_asks(pool):
    reports, reported = [], threading.Event()

    def supervisor(failure):
        reports.append(failure)
        reported.set()

    ref = pooled(pool).start(supervisor=supervisor)
    gate = threading.Event()
    ref.tell(Hold(gate))
    ref.tell(Explode())
    queued = ref.ask(Seen(), block=False)
    gate.set()
    assert reported.wait(10)
    assert isinstance(reports[0], ActorFailed) and "boom" in reports[0].error
    with pytest.raises(pykka.ActorDeadError):
        queued.get(timeout=10)
    assert not ref.is_alive()
    with pytest.raises(pykka.ActorDeadError):
        ref.ask(Seen())


def test_stop_while_busy_handles_what_came_before_and_refuses_what_came_after(pool):
    stopped = threading.Event()

    class Stopping(pooled(pool)):
        def on_stop(self):
            stopped.set()

    ref = Stopping.start()
    gate = threading.Event()
    held = ref.ask(Hold(gate), block=False)
    ref.tell(Note(0, 1))
    before = ref.ask(Seen(), block=False)
    stopping = ref.stop(block=False)
    after = ref.ask(Seen(), block=False)
    gate.set()
    assert held.get(timeout=10) == "held"
    assert before.get(timeout=10) == ([(0, 1)], 0)
    stopping.get(timeout=10)
    assert stopped.is_set()
    with pytest.raises(pykka.ActorDeadError):
        after.get(timeout=10)
    assert ref not in pykka.ActorRegistry.get_all()
    assert ref.stop() is False  # stopping a stopped actor is allowed, and says so


def test_proxies_and_the_registry_work_as_for_thread_actors(pool):
    ref = pooled(pool).start()
    proxy = ref.proxy()
    assert proxy.notes.get() == []
    ref.tell(Note(1, 2))
    assert proxy.on_Seen(Seen()).get() == ([(1, 2)], 0)
    assert pykka.ActorRegistry.get_by_urn(ref.actor_urn) is ref
    pykka.ActorRegistry.stop_all(block=True)
    assert not ref.is_alive()
    wait_for(lambda: pool.stats().run_queue == 0, 5)


def test_a_handler_raising_system_exit_fails_its_actor_alone_on_a_single_worker():
    dispatcher = Dispatcher("exit", workers=1)
    reports = []

    class Exiting(PooledActor):
        pool = dispatcher

        def __init__(self, supervisor=None):
            super().__init__(supervisor)

        def on_Explode(self, msg):
            raise SystemExit(3)

        def on_Seen(self, msg):
            return "alive"

    try:
        bystander = Exiting.start()
        exiting = Exiting.start(supervisor=reports.append)
        exiting.tell(Explode())
        wait_for(lambda: reports, timeout=10, message="the failure reported")
        assert "SystemExit" in reports[0].error and not exiting.is_alive()
        assert bystander.ask(Seen(), timeout=10) == "alive"  # pykka would have stopped every actor
    finally:
        pykka.ActorRegistry.stop_all()
        dispatcher.shutdown()


def test_actors_started_deferred_take_their_first_turns_once_the_starts_end(pool):
    started = []

    class Starting(pooled(pool)):
        def on_start(self):
            started.append(self.actor_urn)

    other = Starting.start()
    wait_for(lambda: started == [other.actor_urn], 5, message="an actor started at once takes its first turn")
    with Starting.starts_deferred():
        refs = [Starting.start() for _ in range(50)]
        for seq, ref in enumerate(refs):
            ref.tell(Note(0, seq))
        # Another thread's messages are scheduled at once: answered while the starts are deferred.
        answers = []
        asking = threading.Thread(target=lambda: answers.append((other.tell(Note(1, 1)), other.ask(Seen(), timeout=5))))
        asking.start()
        asking.join()
        assert answers == [(None, ([(1, 1)], 0))]
        with Starting.starts_deferred():  # entered again: still deferred to the first one's end
            refs.append(Starting.start())
        assert started == [other.actor_urn]
    assert [ref.ask(Seen(), timeout=10) for ref in refs[:50]] == [([(0, seq)], 0) for seq in range(50)]
    assert started[1:] == [ref.actor_urn for ref in refs]  # first turns in the order of the starts
