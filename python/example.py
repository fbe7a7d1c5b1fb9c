#!/usr/bin/env python3
"""A tour of ccf's Python package: a filter of URLs seen, batches of numpy ids, files, threads.

    PYTHONPATH=build/release/python python3 python/example.py
"""

import os
import pickle
import tempfile
import threading

import numpy as np

import ccf

# A static filter: room for 100 000 items at a false-positive rate of at most 0.1%.
seen = ccf.CuckooFilter(100_000, fpr=0.001)
seen.add("https://example.org/")
seen.update(f"https://example.org/page/{i}" for i in range(1000))
assert "https://example.org/page/7" in seen  # added: always found
print("unknown page in filter:", "https://example.org/other" in seen)  # almost surely False
print(seen)
print(f"{len(seen)} items, load {seen.load_factor:.3f}, "
      f"{seen.size_in_bytes} bytes, designed for fpr {seen.fpr:.5f}")

# Batches of numpy uint64 ids: used in place, and the GIL is released while they run.
ids = np.arange(1_000_000, 1_050_000, dtype=np.uint64)
seen.add_many(ids)
found = seen.contains_many(np.array([1_000_001, 5, 1_049_999], dtype=np.uint64))
print("ids found:", found.tolist())
assert found[0] and found[2]
assert 1_000_001 in seen  # an int is the same item as in the array

# Removing: only items that were added.
assert seen.remove("https://example.org/")
assert "https://example.org/" not in seen or seen.count("https://example.org/") > 0

# Files: the format of C++ ccf and of the `ccf` tool (`ccf query seen.ccf KEY`).
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "seen.ccf")
    seen.save(path)
    again = ccf.load(path)
    assert again.contains_many(ids).all()
    print(f"saved and loaded {os.path.getsize(path)} bytes: {again}")

# bytes and pickle.
copy = ccf.CuckooFilter.frombytes(bytes(seen))
assert len(copy) == len(seen)
assert len(pickle.loads(pickle.dumps(seen))) == len(seen)

# A full static filter raises FilterFullError; a growing filter doubles instead.
tiny = ccf.CuckooFilter(10)
try:
    tiny.add_many(np.arange(1000, dtype=np.uint64))
except ccf.FilterFullError as e:
    print(f"full after {e.inserted} items")
growing = ccf.GrowingCuckooFilter(10, fpr=0.001)
growing.add_many(np.arange(100_000, dtype=np.uint64))
print(f"growing filter: {len(growing)} items after {growing.doublings} doublings")

# Threads share a concurrent filter (the default).
shared = ccf.CuckooFilter(400_000)
chunks = [np.arange(i * 100_000, (i + 1) * 100_000, dtype=np.uint64) for i in range(4)]
threads = [threading.Thread(target=shared.add_many, args=(c,)) for c in chunks]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert len(shared) == 400_000 and shared.contains_many(np.concatenate(chunks)).all()
print("4 threads added", len(shared), "ids")
