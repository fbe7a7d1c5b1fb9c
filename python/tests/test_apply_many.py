"""apply_many: a mixed stream of CONTAINS, ADD and REMOVE, in order, answered as the calls one at a
time answer (a refused add answers False and the stream goes on)."""

import threading

import numpy as np
import pytest

import ccf

from test_batches import interrupted_call
from test_threads import two_threads


def one_at_a_time(f, ops, items):
    """What the single-item calls answer, op by op: the reference apply_many must equal."""
    answers = []
    for op, item in zip(ops, items):
        op = int(op)
        if op == ccf.CONTAINS:
            answers.append(item in f)
        elif op == ccf.ADD:
            try:
                f.add(item)
                answers.append(True)
            except ccf.FilterFullError:
                answers.append(False)
        else:
            answers.append(f.remove(item))
    return answers


def mixed_stream(n, seed, universe):
    """n ops: a third each of CONTAINS, ADD and REMOVE. Each add takes a new item (from
    `universe` up: a filter holds only so many copies of one item); lookups and removes draw
    from [0, universe + n), so that they meet items added before and items never added."""
    rng = np.random.default_rng(seed)
    ops = rng.integers(0, 3, size=n, dtype=np.uint8)
    items = rng.integers(0, universe + n, size=n, dtype=np.uint64)
    adds = ops == ccf.ADD
    items[adds] = np.arange(universe, universe + np.count_nonzero(adds), dtype=np.uint64)
    return ops, items


def make(kind, capacity, concurrent):
    if kind == "growing":
        return ccf.GrowingCuckooFilter(capacity, concurrent=concurrent)
    return ccf.CuckooFilter(capacity, concurrent=concurrent)


def test_codes_are_the_library_operation_kinds():
    assert (ccf.CONTAINS, ccf.ADD, ccf.REMOVE) == (0, 1, 2)


@pytest.mark.parametrize("concurrent", [True, False])
@pytest.mark.parametrize("kind", ["static", "growing"])
# 4,000 items fit in the caches (one op at a time); 1,000,000 do not (the next ops' buckets are
# fetched ahead).
@pytest.mark.parametrize("capacity", [4_000, 1_000_000])
def test_same_answers_and_table_as_one_at_a_time(kind, concurrent, capacity):
    f = make(kind, capacity, concurrent)
    twin = make(kind, capacity, concurrent)
    prefill = np.arange(capacity // 2, dtype=np.uint64)
    f.add_many(prefill)
    twin.add_many(prefill)
    # Adds a third of capacity // 4 items at most: a static filter never fills.
    ops, items = mixed_stream(min(60_000, capacity // 4), 7, capacity)
    got = f.apply_many(ops, items)
    assert got.dtype == np.bool_ and got.shape == items.shape
    assert got.tolist() == one_at_a_time(twin, ops, [int(i) for i in items])
    assert len(f) == len(twin)
    assert bytes(f) == bytes(twin)
    # Every kind of answer came up: hits and misses, adds, removes found and not.
    for op in (ccf.CONTAINS, ccf.REMOVE):
        assert got[ops == op].any() and not got[ops == op].all()
    assert got[ops == ccf.ADD].all()


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_refused_add_answers_false_and_the_stream_goes_on(concurrent):
    f = ccf.CuckooFilter(1000, concurrent=concurrent)
    twin = ccf.CuckooFilter(1000, concurrent=concurrent)
    n = 5000  # far more than the table holds: adds of all, then lookups of all
    ops = np.repeat(np.array([ccf.ADD, ccf.CONTAINS], dtype=np.uint8), n)
    items = np.tile(np.arange(n, dtype=np.uint64), 2)
    got = f.apply_many(ops, items)
    assert got.tolist() == one_at_a_time(twin, ops, [int(i) for i in items])
    added, found = got[:n], got[n:]
    assert added.any() and not added.all()  # some adds were refused
    assert found[added].all()  # the lookups after the refusals ran: every added item is found
    assert len(f) == int(np.count_nonzero(added))
    assert bytes(f) == bytes(twin)


def test_names_lists_and_any_items():
    f = ccf.CuckooFilter(1000)
    ops = ["add", ccf.ADD, "contains", "remove", np.uint8(2), "contains", ccf.CONTAINS]
    items = ["apple", b"pear", "apple", "apple", b"pear", b"pear", 5]
    assert f.apply_many(ops, items).tolist() == [True, True, True, True, True, False, False]
    assert len(f) == 0
    assert f.apply_many((op for op in ["add"]), iter([7])).tolist() == [True]
    assert 7 in f


def test_result_has_the_items_shape():
    f = ccf.CuckooFilter(1000)
    items = np.array([[1, 2], [3, 1]], dtype=np.uint64)
    ops = np.array([ccf.ADD, ccf.ADD, ccf.CONTAINS, ccf.CONTAINS], dtype=np.uint8)
    got = f.apply_many(ops, items)
    assert got.shape == (2, 2) and got.tolist() == [[True, True], [False, True]]
    empty = f.apply_many(np.array([], dtype=np.uint8), np.array([], dtype=np.uint64))
    assert empty.dtype == np.bool_ and empty.shape == (0,)
    assert f.apply_many([], []).shape == (0,)


@pytest.mark.parametrize(
    "ops, error, match",
    [
        ([ccf.ADD, ccf.ADD, 3], ValueError, "op 2 is 3"),
        ([ccf.ADD, -1, ccf.ADD], ValueError, "op 1 is -1"),
        ([ccf.ADD, 2**70, ccf.ADD], ValueError, "op 1 is"),
        (["add", "insert", "add"], ValueError, "op 1 is 'insert'"),
        ([ccf.ADD, True, ccf.ADD], TypeError, "not bool"),
        ([ccf.ADD, np.bool_(True), ccf.ADD], TypeError, "not numpy.bool_"),
        ([ccf.ADD, 1.0, ccf.ADD], TypeError, "not float"),
        ([ccf.ADD, None, ccf.ADD], TypeError, "not NoneType"),
        (np.array([1, 1, 7], dtype=np.uint8), ValueError, "op 2 is 7"),
        (np.array([1, 1, 1], dtype=np.int64), TypeError, "uint8"),
        (np.array([1, 1, 1, 1, 1, 1], dtype=np.uint8)[::2], TypeError, "C-contiguous"),
        (np.ma.masked_array(np.ones(3, dtype=np.uint8)), TypeError, "masked"),
        ([ccf.ADD, ccf.ADD], ValueError, "2 ops for 3 items"),
        ([ccf.ADD] * 4, ValueError, "4 ops for 3 items"),
    ],
)
@pytest.mark.parametrize("concurrent", [True, False])
def test_bad_ops_run_nothing(ops, error, match, concurrent):
    f = ccf.CuckooFilter(1000, concurrent=concurrent)
    f.add(99)
    before = bytes(f)
    with pytest.raises(error, match=match):
        f.apply_many(ops, np.array([1, 2, 3], dtype=np.uint64))
    assert bytes(f) == before and len(f) == 1


def test_bad_items_run_nothing():
    f = ccf.CuckooFilter(1000)
    ops = np.ones(3, dtype=np.uint8)
    for items, error in [
        (np.arange(3, dtype=np.int64), TypeError),
        ([1, 2, 3.5], TypeError),
        ([1, -2, 3], ValueError),
        (np.ma.masked_array(np.arange(3, dtype=np.uint64)), TypeError),
    ]:
        with pytest.raises(error):
            f.apply_many(ops, items)
    assert len(f) == 0


def test_arrays_are_read_as_they_are_at_each_call():
    f = ccf.CuckooFilter(1000)
    ops = np.array([ccf.ADD, ccf.CONTAINS], dtype=np.uint8)
    items = np.array([4, 4], dtype=np.uint64)
    assert f.apply_many(ops, items).tolist() == [True, True]
    ops[1] = ccf.REMOVE
    items[:] = 5
    assert f.apply_many(ops, items).tolist() == [True, True]
    assert len(f) == 1 and 4 in f and 5 not in f


@pytest.mark.parametrize("concurrent", [True, False])
def test_an_ops_array_changed_during_the_call_stops_it_at_that_op(concurrent):
    # An items generator (read after the ops were checked) makes op 20,000 bad: the ops before it
    # ran, and the error names it by its place in the whole stream (past the first chunk).
    n = 40_000
    f = ccf.CuckooFilter(100_000, concurrent=concurrent)
    ops = np.full(n, ccf.ADD, dtype=np.uint8)

    def items():
        for i in range(n):
            if i == n - 1:
                ops[20_000] = 9
            yield i

    with pytest.raises(ValueError, match="op 20000 became 9"):
        f.apply_many(ops, items())
    assert len(f) == 20_000
    assert f.contains_many(np.arange(20_000, dtype=np.uint64)).all()


def test_concurrent_apply_many_overlaps_and_loses_nothing():
    # Thread i adds its own keys, looks them up and removes every other one, in one stream.
    n = 1_000_000
    f = ccf.CuckooFilter(4 * n, concurrent=True)
    keys = [np.arange(i * n, (i + 1) * n, dtype=np.uint64) for i in (0, 1)]
    streams = []
    for k in keys:
        ops = np.concatenate(
            [np.full(n, ccf.ADD), np.full(n, ccf.CONTAINS), np.full(n // 2, ccf.REMOVE)]
        ).astype(np.uint8)
        streams.append((ops, np.concatenate([k, k, k[::2]])))
    results = [None, None]

    def call(f, i):
        results[i] = f.apply_many(*streams[i])

    (a_start, a_end), (b_start, _) = two_threads(f, call)
    assert a_start < b_start < a_end  # B ran while A was in C++: the GIL was released
    assert results[0].all() and results[1].all()
    assert len(f) == n
    for k in keys:
        assert f.contains_many(np.ascontiguousarray(k[1::2])).all()


@pytest.mark.parametrize("growing", [False, True])
def test_four_threads_of_mixed_streams(growing):
    f = ccf.GrowingCuckooFilter(1000) if growing else ccf.CuckooFilter(200_000)
    held = np.arange(40_000, dtype=np.uint64)
    f.add_many(held)
    barrier = threading.Barrier(4)
    errors = []

    def work(t):
        try:
            mine = np.arange((t + 1) * 10**6, (t + 1) * 10**6 + 20_000, dtype=np.uint64)
            barrier.wait()
            for c in np.array_split(mine, 10):
                m = len(c)
                ops = np.concatenate(
                    [np.full(m, ccf.ADD), np.full(m, ccf.CONTAINS), np.full(m, ccf.REMOVE)]
                ).astype(np.uint8)
                lookups = held[np.random.default_rng(t).integers(0, len(held), size=m)]
                assert f.apply_many(ops, np.concatenate([c, c, c])).all()
                assert f.apply_many(np.zeros(m, dtype=np.uint8), lookups).all()
        except BaseException as e:  # reported by the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(f) == len(held)
    assert f.contains_many(held).all()


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_long_stream_stops_at_ctrl_c(concurrent):
    n = 8_000_000
    f = ccf.GrowingCuckooFilter(1000, concurrent=concurrent)
    ops = np.full(n, ccf.ADD, dtype=np.uint8)
    items = np.arange(n, dtype=np.uint64)  # made before the timer starts
    interrupted_call(lambda: f.apply_many(ops, items))
    assert 0 < len(f) < n  # the ops before the signal ran, in order
    assert f.contains_many(np.arange(len(f), dtype=np.uint64)).all()
