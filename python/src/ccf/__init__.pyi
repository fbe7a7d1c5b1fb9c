"""Type stubs of the ccf package (concurrent cuckoo filters)."""

import os
from typing import Iterable, Union

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer as _Buffer
from typing_extensions import Self

__version__: str
default_seed: int
CONTAINS: int
"""apply_many's op code for `item in f` (0)."""
ADD: int
"""apply_many's op code for `f.add(item)` (1)."""
REMOVE: int
"""apply_many's op code for `f.remove(item)` (2)."""

Item = Union[int, str, bytes, bytearray, memoryview, _Buffer]
"""An item: an int in [0, 2**64) (hashed as its 8 bytes little-endian), a str (UTF-8), bytes or
any C-contiguous buffer (its bytes)."""

Items = Union[npt.NDArray[np.uint64], Iterable[Item]]
"""Items for a batch: a C-contiguous numpy uint64 array (used in place) or any iterable of items."""

Ops = Union[npt.NDArray[np.uint8], Iterable[Union[int, str]]]
"""apply_many's ops: a C-contiguous numpy uint8 array of CONTAINS, ADD, REMOVE (used in place) or
any iterable of those codes or their names ("contains", "add", "remove")."""

PathLike = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]

class FilterFullError(Exception):
    """A filter refused an item: a CuckooFilter is full, or a GrowingCuckooFilter is crowded by
    copies of items added many times."""

    inserted: int
    """How many items of the call went in before the refused one."""

class FormatError(ValueError):
    """Bytes or a file that are not a valid ccf filter."""

class Filter:
    """The methods and properties common to ccf's filters (not made directly)."""

    def add(self, item: Item) -> None: ...
    def remove(self, item: Item) -> bool: ...
    def __contains__(self, item: object) -> bool: ...
    def count(self, item: Item) -> int: ...
    def hash(self, item: Item) -> int: ...
    def __len__(self) -> int: ...
    def add_many(self, items: Items) -> None: ...
    def contains_many(self, items: Items) -> npt.NDArray[np.bool_]: ...
    def update(self, items: Items) -> None: ...
    def apply_many(self, ops: Ops, items: Items) -> npt.NDArray[np.bool_]: ...
    def clear(self) -> None: ...
    def save(self, path: PathLike) -> None: ...
    def __bytes__(self) -> bytes: ...
    def __reduce__(
        self,
    ) -> (
        tuple[object, tuple[bytes, bool]] | tuple[object, tuple[bytes, bool, type], object]
    ): ...
    @property
    def capacity(self) -> int: ...
    @property
    def load_factor(self) -> float: ...
    @property
    def fpr(self) -> float:
        """The false-positive rate expected once the filter holds `capacity` items."""
    @property
    def expected_fpr(self) -> float:
        """A CuckooFilter: the false-positive rate expected at its current load (0.0 when empty).
        A GrowingCuckooFilter: the same as `fpr`, its bound at its current size."""
    @property
    def size_in_bytes(self) -> int: ...
    @property
    def memory_in_bytes(self) -> int: ...
    @property
    def fingerprint_bits(self) -> int: ...
    @property
    def slots_per_bucket(self) -> int: ...
    @property
    def num_buckets(self) -> int: ...
    @property
    def growing(self) -> bool: ...
    @property
    def doublings(self) -> int: ...
    @property
    def concurrent(self) -> bool: ...
    @property
    def seed(self) -> int: ...

class CuckooFilter(Filter):
    """A cuckoo filter of fixed capacity; adding to a full one raises FilterFullError."""

    def __init__(
        self,
        capacity: int,
        fpr: float = 0.001,
        *,
        concurrent: bool = True,
        seed: int = ...,
    ) -> None: ...
    @classmethod
    def frombytes(cls, data: _Buffer | bytes, *, concurrent: bool = True) -> Self: ...

class GrowingCuckooFilter(Filter):
    """A cuckoo filter that doubles whenever it fills."""

    def __init__(
        self,
        initial_capacity: int,
        fpr: float = 0.001,
        *,
        concurrent: bool = True,
        max_doublings: int = 16,
        seed: int = ...,
    ) -> None: ...
    @classmethod
    def frombytes(cls, data: _Buffer | bytes, *, concurrent: bool = True) -> Self: ...

def load(path: PathLike, *, concurrent: bool = True) -> CuckooFilter | GrowingCuckooFilter: ...
def loads(data: _Buffer | bytes, *, concurrent: bool = True) -> CuckooFilter | GrowingCuckooFilter: ...
def _restore(data: bytes, concurrent: bool, cls: type | None = None) -> Filter: ...
