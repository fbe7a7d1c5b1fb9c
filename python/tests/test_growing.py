"""The growing filter: it doubles as it fills and keeps every item."""

import subprocess
import sys

import numpy as np
import pytest

import ccf


@pytest.mark.parametrize("concurrent", [True, False])
def test_grows_to_a_hundred_times(concurrent):
    f = ccf.GrowingCuckooFilter(1000, 0.001, concurrent=concurrent)
    assert f.growing is True and f.doublings == 0
    initial = f.capacity
    keys = np.arange(100_000, dtype=np.uint64)
    f.add_many(keys[:50_000])
    f.update(int(k) for k in keys[50_000:])
    assert len(f) == 100_000
    assert f.doublings >= 6 and f.capacity >= 100_000 > initial
    assert f.contains_many(keys).all()
    assert all(int(k) in f for k in keys[::1000])
    assert 0 < f.fpr <= 0.001


def test_growing_false_positive_rate():
    f = ccf.GrowingCuckooFilter(2000, 0.01)
    f.add_many(np.arange(200_000, dtype=np.uint64))
    queries = 1_000_000
    measured = f.contains_many(np.arange(10**9, 10**9 + queries, dtype=np.uint64)).mean()
    assert 0 < f.fpr <= 0.01
    assert measured <= 2 * f.fpr + 4 * (f.fpr / queries) ** 0.5


def test_growing_remove_and_count():
    f = ccf.GrowingCuckooFilter(100)
    f.update(["x", "y", "x"])
    assert f.count("x") == 2 and len(f) == 3
    assert f.remove("x") and f.remove("x")
    assert "x" not in f and "y" in f


def test_growing_arguments():
    f = ccf.GrowingCuckooFilter(100, 0.01, max_doublings=4, seed=9, concurrent=False)
    assert f.seed == 9 and f.concurrent is False
    assert "GrowingCuckooFilter(" in repr(f)
    with pytest.raises(TypeError):
        ccf.GrowingCuckooFilter(100, 0.01, 4)  # max_doublings is keyword-only
    # A start no table can hold is refused (it was accepted, and the first add crashed).
    for huge in (2**62, 2**63 - 1):
        with pytest.raises(ValueError):
            ccf.GrowingCuckooFilter(huge)
    # A file records at most 64: a filter made with more could not be loaded again.
    for doublings in (65, 2**32):
        with pytest.raises(ValueError, match=r"max_doublings must be an integer in \[0, 64\]"):
            ccf.GrowingCuckooFilter(100, 0.01, max_doublings=doublings)
    most = ccf.GrowingCuckooFilter(100, 0.01, max_doublings=64)
    assert bytes(ccf.loads(bytes(most))) == bytes(most)


def test_memory_counts_the_hashes_a_small_filter_keeps():
    f = ccf.GrowingCuckooFilter(1000)
    f.add_many(np.arange(900, dtype=np.uint64))
    assert f.memory_in_bytes >= f.size_in_bytes + 900 * 16
    s = ccf.CuckooFilter(1000, concurrent=False)
    assert s.memory_in_bytes == s.size_in_bytes


def test_memory_counts_a_concurrent_filters_locks_and_counters():
    # Its lock words and counter shards (two of 64 cache lines) were left out: a filter for
    # 1,000 items held 6 times what it reported.
    for f in (ccf.CuckooFilter(1000), ccf.GrowingCuckooFilter(1000)):
        assert f.concurrent
        assert f.memory_in_bytes >= f.size_in_bytes + 2 * 64 * 64, type(f).__name__


@pytest.mark.parametrize("concurrent", [True, False])
def test_refusal_names_the_copies_not_the_capacity(concurrent):
    f = ccf.GrowingCuckooFilter(1000, concurrent=concurrent)
    with pytest.raises(ccf.FilterFullError) as info:
        for _ in range(9):
            f.add("x")  # an item's two buckets hold 8 copies at most
    message = str(info.value)
    assert "added many times" in message
    assert "larger capacity" not in message and "GrowingCuckooFilter" not in message
    assert f.count("x") == 8 and f.doublings == 0
    with pytest.raises(ccf.FilterFullError, match="added many times") as info:
        f.add_many(["y"] * 20)
    assert info.value.inserted == 8
    static = ccf.CuckooFilter(100, concurrent=concurrent)
    with pytest.raises(ccf.FilterFullError, match="larger capacity or a GrowingCuckooFilter"):
        static.add_many(range(100_000))
    assert "GrowingCuckooFilter" in ccf.FilterFullError.__doc__
    # A static filter far from full that refuses a copy says so, not "use a larger capacity".
    few = ccf.CuckooFilter(100_000, concurrent=concurrent)
    with pytest.raises(ccf.FilterFullError, match="less than half full") as info:
        few.add_many(["z"] * 20)
    assert info.value.inserted == 2 * few.slots_per_bucket
    assert "larger capacity" not in str(info.value)


def test_expected_fpr_of_a_growing_filter_is_its_bound():
    f = ccf.GrowingCuckooFilter(1000)
    assert f.expected_fpr == f.fpr > 0  # at any load, empty included
    assert f.expected_fpr == pytest.approx(5.8e-05, rel=0.01)  # the figure docs/python.md gives
    f.add_many(np.arange(5000, dtype=np.uint64))
    assert f.doublings > 0 and f.expected_fpr == f.fpr
    assert ccf.CuckooFilter(1000).expected_fpr == 0.0
    assert "GrowingCuckooFilter" in ccf.Filter.expected_fpr.__doc__


# Runs in a child under an address-space limit: add_many into a growing filter until a doubling
# finds no memory. Prints e.inserted, len(f) and the false negatives among the items inserted.
NO_MEMORY = r"""
import resource, sys, numpy as np, ccf
def vm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmSize"))
keys = np.arange(1, 4_000_001, dtype=np.uint64)
f = ccf.GrowingCuckooFilter(1000, concurrent=sys.argv[1] == "concurrent")
items = keys if sys.argv[2] == "array" else (int(k) for k in keys)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
# Room for tables of 2^19 buckets (4.7 MB), not 2^20 (9.4 MB more): about 2 M items.
resource.setrlimit(resource.RLIMIT_AS, (vm() + 12 * 2**20, hard))
try:
    f.add_many(items)
    print("no MemoryError")
except MemoryError as e:
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    n = e.inserted
    print(n, len(f), int((~f.contains_many(keys[:n])).sum()), str(e))
"""


@pytest.mark.parametrize("source", ["array", "iterable"])
@pytest.mark.parametrize("kind", ["concurrent", "sequential"])
def test_a_doubling_with_no_memory_says_what_went_in(kind, source):
    # The MemoryError had no `inserted`: what of the call had gone in was unknown.
    out = subprocess.run([sys.executable, "-c", NO_MEMORY, kind, source], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    fields = out.stdout.split(maxsplit=3)
    assert len(fields) == 4, out.stdout
    inserted, size, false_negatives = map(int, fields[:3])
    assert 0 < inserted < 4_000_000 and inserted == size
    assert false_negatives == 0
    assert "no memory to double the growing filter" in fields[3]
