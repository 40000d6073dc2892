"""Resource arithmetic, checked as algebra over random vectors."""

from hypothesis import given
from hypothesis import strategies as st

from si import si_pb2
from si.resources import ZERO, Resource, component_max, component_min, min_limit, total

NAMES = st.sampled_from(["vcore", "memory", "pods", "nvidia.com/gpu"])
VALUES = st.integers(min_value=-(2**40), max_value=2**40)
resources = st.dictionaries(NAMES, VALUES, max_size=4).map(Resource)
non_negative = st.dictionaries(NAMES, st.integers(min_value=0, max_value=2**40), max_size=4).map(Resource)


@given(resources, resources)
def test_add_then_sub_is_identity(a, b):
    assert (a + b) - b == a


@given(resources, resources, resources)
def test_add_is_commutative_and_associative(a, b, c):
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)


@given(non_negative, non_negative)
def test_subtraction_never_hides_a_negative(a, b):
    difference = a - b
    for name in b:
        if b[name] > a[name]:
            assert difference[name] < 0
            assert difference.has_negative()


@given(resources, resources)
def test_component_min_and_max_bound_both(a, b):
    low, high = component_min(a, b), component_max(a, b)
    for name in set(a) | set(b):
        assert low[name] <= a[name] <= high[name] or low[name] <= b[name] <= high[name]
        assert low[name] == min(a[name], b[name]) and high[name] == max(a[name], b[name])
    assert low + high == a + b


@given(non_negative, non_negative)
def test_fits_in_needs_every_requested_type_on_the_node(ask, capacity):
    assert ask.fits_in(capacity) == all(ask[n] <= capacity[n] for n in ask)


@given(non_negative, non_negative)
def test_a_maximum_that_omits_a_type_does_not_limit_it(usage, maximum):
    assert usage.fits_in_max(maximum) == all(usage[n] <= maximum[n] for n in maximum)
    assert usage.fits_in_max(None)
    assert usage.fits_in_max(Resource())


@given(non_negative, non_negative)
def test_min_limit_is_the_tighter_maximum(a, b):
    tighter = min_limit(a, b)
    for usage in (a, b, component_min(a, b)):
        assert usage.fits_in_max(tighter) == (usage.fits_in_max(a) and usage.fits_in_max(b))
    assert min_limit(None, a) == a and min_limit(a, None) == a and min_limit(None, None) is None


@given(non_negative, non_negative)
def test_dominant_share_is_the_largest_fraction(used, capacity):
    share = used.dominant_share(capacity)
    for name in used:
        if used[name] > 0:
            assert share >= (used[name] / capacity[name] if capacity[name] else 1.0)
    assert 0.0 <= share


def test_zero_handling():
    assert ZERO.is_zero() and Resource.of(vcore=0).is_zero()
    assert Resource.of(vcore=0) == ZERO, "a missing type and an explicit zero are the same quantity"
    assert Resource.of(vcore=0).fits_in_max(Resource.of(vcore=0))
    assert not Resource.of(vcore=1).fits_in_max(Resource.of(vcore=0)), "a max of zero allows none"
    assert Resource.of(vcore=1).fits_in_max(Resource.of(memory=0)), "a type missing from a max is unlimited"
    assert Resource.of(vcore=5).dominant_share(ZERO) == 1.0


@given(resources)
def test_proto_round_trip(resource):
    assert Resource.from_proto(si_pb2.Resource.FromString(resource.to_proto().SerializeToString())) == resource


@given(st.lists(resources, max_size=10))
def test_total_is_repeated_addition(vectors):
    expected = ZERO
    for vector in vectors:
        expected = expected + vector
    assert total(vectors) == expected


@given(resources, st.integers(min_value=1, max_value=20))
def test_total_of_one_shared_vector_is_repeated_addition(vector, count):
    expected = ZERO
    for _ in range(count):
        expected = expected + vector
    summed = total([vector] * count)  # the records of one workload share their vector
    assert summed == expected and list(summed) == list(vector)


@given(resources)
def test_has_negative_is_whether_a_component_is_below_zero(resource):
    assert resource.has_negative() == any(value < 0 for value in resource.values())


def test_from_kubernetes():
    assert Resource.from_kubernetes({"cpu": "1500m", "memory": "1Gi"}) == Resource.of(vcore=1500, memory=2**30)


@given(non_negative, non_negative)
def test_remaining_keeps_unlimited_types_unlimited(maximum, used):
    from si.resources import remaining

    left = remaining(maximum, used)
    assert set(left) == set(maximum)
    assert all(left[n] == maximum[n] - used[n] for n in maximum)
