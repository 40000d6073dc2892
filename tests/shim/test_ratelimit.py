"""The client-side token bucket: paced after its burst, and never for a tool's unlimited client."""

from actors.shim.ratelimit import UNLIMITED, TokenBucket


class FrozenClock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)


def test_requests_beyond_the_burst_wait_their_turn():
    clock = FrozenClock()
    bucket = TokenBucket(10, 2, clock=clock, sleep=clock.sleep)
    for _ in range(4):
        bucket.wait()
    assert clock.sleeps == [0.1, 0.2]


def test_an_unlimited_bucket_never_waits():
    clock = FrozenClock()
    bucket = TokenBucket(10, 1, clock=clock, sleep=clock.sleep)
    bucket.set_rate(UNLIMITED, 0)
    for _ in range(10_000):
        bucket.wait()
    assert clock.sleeps == []


def test_requests_sent_together_wait_once_for_the_last_of_them():
    clock = FrozenClock()
    bucket = TokenBucket(10, 2, clock=clock, sleep=clock.sleep)
    bucket.wait(4)  # two from the burst, then the turns of the third and fourth
    bucket.wait()
    assert clock.sleeps == [0.2, 0.3]
