"""ccf: concurrent cuckoo filters.

A cuckoo filter is a compact set that answers "may this item be in the set?": never wrongly
"no" for an item added, and wrongly "yes" at about a chosen false-positive rate. Filters here are
ccf's C++ filters; their files are those of C++ ccf and of the ``ccf`` tool.

>>> import ccf
>>> f = ccf.CuckooFilter(1000, fpr=0.001)
>>> f.add("apple")
>>> "apple" in f
True
"""

from ._ccf import (
    CuckooFilter,
    Filter,
    FilterFullError,
    FormatError,
    GrowingCuckooFilter,
    __version__,
    default_seed,
    load,
    loads,
)


def _restore(data: bytes, concurrent: bool) -> Filter:
    """Unpickles a filter (Filter.__reduce__ names this function)."""
    return loads(data, concurrent=concurrent)


__all__ = [
    "CuckooFilter",
    "Filter",
    "FilterFullError",
    "FormatError",
    "GrowingCuckooFilter",
    "__version__",
    "default_seed",
    "load",
    "loads",
]
