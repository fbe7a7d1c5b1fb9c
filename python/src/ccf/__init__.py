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

from typing import Optional

from ._ccf import (
    ADD,
    CONTAINS,
    REMOVE,
    CuckooFilter,
    Filter,
    FilterFullError,
    FormatError,
    GrowingCuckooFilter,
    __version__,
    default_seed,
    _loads_as,
    load,
    loads,
)


def _restore(data: bytes, concurrent: bool, cls: Optional[type] = None) -> Filter:
    """Unpickles or copies a filter (Filter.__reduce__ names this function) as an instance of
    cls, its class (a subclass stays one); without cls (a pickle of an earlier version), as
    ccf.loads gives it."""
    if cls is None:
        return loads(data, concurrent=concurrent)
    return _loads_as(cls, data, concurrent=concurrent)


__all__ = [
    "ADD",
    "CONTAINS",
    "REMOVE",
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
