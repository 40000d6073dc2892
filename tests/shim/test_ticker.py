"""The shim's timers on the injected clock: on a virtual clock, each message is told at its exact time."""

from actors.base import Actor, message
from actors.shim.ticker import Alarms, Ticker
from si.clock import NS, VirtualClock


@message
class Ping:
    name: str


@message
class Seen:
    pass


class Recorder(Actor):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.seen = []

    def on_Ping(self, msg):
        self.seen.append((msg.name, self.clock.monotonic_ns()))

    def on_Seen(self, msg):
        return list(self.seen)


def settled(ref):
    """Between timers: the actor has handled what it was told before the clock moves on."""
    return lambda: ref.ask(Seen())


def test_alarms_tell_at_their_time_and_stop_drops_the_pending_ones():
    clock = VirtualClock()
    ref = Recorder.start(clock)
    try:
        alarms, dropped = Alarms("test", clock), Alarms("dropped", clock)
        alarms.after(1.0, ref, Ping("late"))
        alarms.after(0.25, ref, Ping("early"))
        dropped.after(0.5, ref, Ping("dropped"))
        dropped.stop()
        clock.advance(0.99, between=settled(ref))
        assert ref.ask(Seen()) == [("early", NS // 4)]
        clock.advance(0.01, between=settled(ref))
        assert ref.ask(Seen()) == [("early", NS // 4), ("late", NS)]
    finally:
        ref.stop()


def test_a_ticker_tells_each_interval_until_stopped_or_the_actor_is_gone():
    clock = VirtualClock()
    ref = Recorder.start(clock)
    try:
        ticker = Ticker(ref, Ping("tick"), 0.5, clock=clock).start()
        clock.advance(1.5, between=settled(ref))
        assert [at for _, at in ref.ask(Seen())] == [NS // 2, NS, 3 * NS // 2]
        ticker.stop()
        clock.advance(1, between=settled(ref))
        assert len(ref.ask(Seen())) == 3
        Ticker(ref, Ping("tick"), 0.5, clock=clock).start()
    finally:
        ref.stop()
    clock.advance(1)  # the actor is gone: the ticker ends instead of failing
