#!/usr/bin/env python3
"""Benchmark of ccf's Python package: membership of numpy uint64 keys in a ccf.CuckooFilter
(contains_many) against a Python set and numpy.isin, and the memory per item of each; a 90/5/5
mix of lookups, adds and removes through apply_many against the same calls one at a time.

    PYTHONPATH=build/release/python python3 python/bench.py [--n 10000000] [--fpr 0.001]

Half the queries are keys of the set, half are not. Rates are per key, on one thread (the best
of --repeat runs); the set is queried with `x in s` over a sample of the queries.
"""

import argparse
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import ccf


def best_time(fn, repeat):
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def rate(n, seconds):
    return n / seconds / 1e6  # million keys per second


def bench_filter(keys, queries, members, fpr, repeat, concurrent):
    f = ccf.CuckooFilter(len(keys), fpr, concurrent=concurrent)
    start = time.perf_counter()
    f.add_many(keys)
    build = time.perf_counter() - start
    seconds, found = best_time(lambda: f.contains_many(queries), repeat)
    assert found[members].all(), "a false negative"
    measured_fpr = found[~members].mean()
    return f, build, seconds, measured_fpr


def bench_threads(f, queries, threads, repeat):
    """contains_many on a concurrent filter from `threads` Python threads, each over its part of
    the queries (the GIL is released, so they run at once)."""
    parts = np.array_split(queries, threads)
    with ThreadPoolExecutor(threads) as pool:
        seconds, _ = best_time(lambda: list(pool.map(f.contains_many, parts)), repeat)
    return seconds


def bench_set(keys, queries, sample):
    s = set(keys.tolist())
    sample_list = queries[:sample].tolist()
    start = time.perf_counter()
    hits = sum(x in s for x in sample_list)
    seconds = time.perf_counter() - start
    # memory: the set's table and the int objects it holds (estimated from a sample)
    ints = sum(sys.getsizeof(x) for x in sample_list[:10_000]) / min(sample, 10_000)
    per_item = sys.getsizeof(s) / len(s) + ints
    return seconds, hits, per_item


def mixed_stream(keys, n, rng):
    """n ops of a 90/5/5 mix over a filter holding `keys`: lookups of held keys, adds of new
    keys, removes of keys added earlier in the stream (so every answer is True)."""
    ops = rng.choice(np.array([ccf.CONTAINS, ccf.ADD, ccf.REMOVE], dtype=np.uint8), size=n,
                     p=[0.9, 0.05, 0.05])
    items = keys[rng.integers(0, len(keys), size=n)]
    adds, removes = np.flatnonzero(ops == ccf.ADD), np.flatnonzero(ops == ccf.REMOVE)
    fresh = np.arange(2**63, 2**63 + len(adds), dtype=np.uint64)
    items[adds] = fresh
    # Each remove takes an item added before it; removes with none left become lookups.
    k = np.searchsorted(adds, removes)  # adds before each remove
    taken = np.minimum(np.arange(len(removes)), k - 1)
    ok = (k > 0) & (taken == np.arange(len(removes)))
    items[removes[ok]] = fresh[taken[ok]]
    ops[removes[~ok]] = ccf.CONTAINS
    return ops, np.ascontiguousarray(items)


def bench_mixed(keys, fpr, n, repeat, sample):
    """apply_many over a 90/5/5 stream on a concurrent filter holding `keys`, against the same
    ops one call at a time (over a sample) on the filter and on a Python set."""
    rng = np.random.default_rng(7)
    ops, items = mixed_stream(keys, n, rng)
    best = float("inf")
    for _ in range(repeat):
        f = ccf.CuckooFilter(len(keys) + n, fpr, concurrent=True)
        f.add_many(keys)
        start = time.perf_counter()
        answers = f.apply_many(ops, items)
        best = min(best, time.perf_counter() - start)
        assert answers.all(), "a false negative or a refused add"
    calls = {ccf.CONTAINS: f.__contains__, ccf.ADD: f.add, ccf.REMOVE: f.remove}
    s = set(keys.tolist())
    set_calls = {ccf.CONTAINS: s.__contains__, ccf.ADD: s.add, ccf.REMOVE: s.discard}
    pairs = list(zip(ops[:sample].tolist(), items[:sample].tolist()))
    loops = []
    for table in (calls, set_calls):
        start = time.perf_counter()
        for op, item in pairs:
            table[op](item)
        loops.append(time.perf_counter() - start)
    return rate(n, best), rate(len(pairs), loops[0]), rate(len(pairs), loops[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="keys in the set (default 10^7)")
    ap.add_argument("--fpr", type=float, default=0.001, help="the filter's target rate")
    ap.add_argument("--set-sample", type=int, default=1_000_000,
                    help="queries asked of the Python set (default 10^6)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timing (the best counts)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="Python threads for the concurrent filter's multi-threaded run")
    a = ap.parse_args()

    rng = np.random.default_rng(42)
    keys = rng.integers(0, 2**64, size=a.n, dtype=np.uint64)
    others = rng.integers(0, 2**64, size=a.n - a.n // 2, dtype=np.uint64)
    queries = np.concatenate([keys[: a.n // 2], others])
    members = np.zeros(len(queries), dtype=bool)
    members[: a.n // 2] = True
    order = rng.permutation(len(queries))
    queries, members = np.ascontiguousarray(queries[order]), members[order]
    sample = min(a.set_sample, len(queries))

    print(f"ccf {ccf.__version__}, Python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}")
    print(f"n = {a.n:,} uint64 keys, {len(queries):,} queries (half present), target fpr {a.fpr}")
    print()

    results = {}
    for concurrent in (True, False):
        f, build, seconds, fpr = bench_filter(keys, queries, members, a.fpr, a.repeat, concurrent)
        name = "concurrent" if concurrent else "sequential"
        results[name] = rate(len(queries), seconds)
        print(f"CuckooFilter ({name}): add_many {rate(a.n, build):7.1f} M keys/s, "
              f"contains_many {results[name]:7.1f} M keys/s, measured fpr {fpr:.5f} "
              f"(expected {f.expected_fpr:.5f})")
        if concurrent and a.threads > 1:
            threaded = rate(len(queries), bench_threads(f, queries, a.threads, a.repeat))
            print(f"CuckooFilter (concurrent), {a.threads} Python threads: contains_many "
                  f"{threaded:7.1f} M keys/s in all")
    bits = f.size_in_bytes * 8 / a.n
    print(f"  {f.fingerprint_bits}-bit fingerprints x {f.slots_per_bucket} slots, "
          f"{f.size_in_bytes / 2**20:.1f} MiB, {bits:.1f} bits per key")

    set_seconds, hits, set_bytes = bench_set(keys, queries, sample)
    set_rate = rate(sample, set_seconds)
    assert hits == members[:sample].sum()
    print(f"Python set: x in s {set_rate:7.1f} M keys/s (over {sample:,} queries), "
          f"{set_bytes:.1f} bytes per key (table and int objects)")

    isin_seconds, found = best_time(lambda: np.isin(queries, keys), 1)
    assert (found == members).all()
    isin_rate = rate(len(queries), isin_seconds)
    print(f"numpy.isin: {isin_rate:7.1f} M keys/s (sorting the keys included), "
          "8 bytes per key (the key array)")

    mixed, one_by_one, set_mixed = bench_mixed(keys, a.fpr, len(queries), a.repeat, sample)
    print(f"mixed 90/5/5 (contains/add/remove): apply_many {mixed:7.1f} M ops/s; one call at a "
          f"time {one_by_one:7.1f} on the filter, {set_mixed:7.1f} on a Python set")

    print()
    best = max(results.values())  # one thread
    print(f"contains_many vs set:        {best / set_rate:6.1f}x faster")
    print(f"contains_many vs numpy.isin: {best / isin_rate:6.1f}x faster")
    print(f"memory per key vs set:       {set_bytes * 8 / bits:6.1f}x smaller")
    print(f"memory per key vs uint64 array: {64 / bits:6.1f}x smaller")
    print(f"apply_many vs set, mixed 90/5/5: {mixed / set_mixed:6.1f}x faster")


if __name__ == "__main__":
    main()
