"""Single items: add, remove, membership, count, len, hashing of each item type, properties."""

import array
import os
import subprocess
import sys

import numpy as np
import pytest

import ccf


@pytest.fixture(params=[True, False], ids=["concurrent", "sequential"])
def concurrent(request):
    return request.param


def test_add_contains_remove(concurrent):
    f = ccf.CuckooFilter(1000, concurrent=concurrent)
    assert len(f) == 0 and "a" not in f
    assert f.add("a") is None
    assert "a" in f and len(f) == 1
    assert f.count("a") == 1
    f.add("a")
    assert f.count("a") == 2 and len(f) == 2
    assert f.remove("a") is True
    assert "a" in f
    assert f.remove("a") is True
    assert "a" not in f and len(f) == 0
    assert f.remove("a") is False


def test_item_types_hash_as_bytes():
    f = ccf.CuckooFilter(1000)
    assert f.hash("héllo") == f.hash("héllo".encode("utf-8"))
    assert f.hash(b"abc") == f.hash(bytearray(b"abc")) == f.hash(memoryview(b"abc"))
    assert f.hash(array.array("B", b"abc")) == f.hash(b"abc")
    for v in (0, 1, 5, 2**32 + 7, 2**64 - 1):
        assert f.hash(v) == f.hash(v.to_bytes(8, "little"))
        assert f.hash(np.uint64(v)) == f.hash(v)
    assert f.hash(np.int32(7)) == f.hash(7)
    assert f.hash(True) == f.hash(1)
    assert f.hash(b"abc") != f.hash(b"abd")


def test_int_item_equals_its_bytes():
    f = ccf.CuckooFilter(1000)
    f.add(12345)
    assert (12345).to_bytes(8, "little") in f
    f.add(b"\x07" + bytes(7))
    assert 7 in f


def test_bad_items():
    f = ccf.CuckooFilter(100)
    with pytest.raises(ValueError):
        f.add(-1)
    with pytest.raises(OverflowError):
        f.add(2**64)
    with pytest.raises(ValueError):
        _ = -(2**70) in f
    for bad in (1.5, None, object(), [1, 2]):
        with pytest.raises(TypeError):
            f.add(bad)
    with pytest.raises(TypeError):
        f.add(np.arange(4, dtype=np.uint64)[::2])  # not a contiguous buffer
    # numpy's non-integer scalars expose their bytes as buffers: not items, as a float is not
    # (np.float64(5.0) is a float, and was hashed as its 8 IEEE bytes, not as the item 5).
    for bad in (np.float64(5.0), np.float32(5.0), np.complex128(1j), np.datetime64("2026-01-01"),
                np.timedelta64(5, "s"), np.timedelta64(5), np.void(b"\x05")):
        # ccf's message, not numpy's (timedelta64 is a numpy integer that is no index).
        with pytest.raises(TypeError, match="an item is an int, str, bytes or a buffer"):
            f.add(bad)
    # An object array's bytes are the addresses of its objects: equal arrays were other items.
    objects = np.array([10**15 + 1], dtype=object)
    for bad in (objects, memoryview(objects)):
        with pytest.raises(TypeError, match="format 'O'"):
            f.add(bad)
    # A structure whose field is named with an O holds no object: it is an item.
    fields = np.zeros(2, dtype=[("Open", "<i4")])
    f.add(fields)
    assert fields in f and f.hash(fields) == f.hash(fields.tobytes())
    f.remove(fields)
    assert len(f) == 0
    # A numpy bool is an int, as a bool is.
    assert f.hash(np.bool_(True)) == f.hash(True) == f.hash(1)
    assert f.hash(np.bool_(False)) == f.hash(0)


def test_hash_is_stable_across_processes():
    f = ccf.CuckooFilter(10)
    code = "import ccf; f = ccf.CuckooFilter(10); print(f.hash(b'stable'), f.hash(42), f.hash('é'))"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    assert out.stdout.split() == [str(f.hash(b"stable")).encode(), str(f.hash(42)).encode(),
                                  str(f.hash("é")).encode()]


def test_seed_changes_hash():
    a = ccf.CuckooFilter(10)
    b = ccf.CuckooFilter(10, seed=ccf.default_seed + 1)
    assert a.seed == ccf.default_seed and b.seed == ccf.default_seed + 1
    assert a.hash(b"x") != b.hash(b"x")


def test_properties(concurrent):
    f = ccf.CuckooFilter(10_000, 0.001, concurrent=concurrent)
    assert f.capacity >= 10_000
    assert 0 < f.fpr <= 0.001
    assert f.expected_fpr == 0.0 and f.load_factor == 0.0
    assert f.fingerprint_bits in (4, 8, 12, 16, 32)
    assert f.slots_per_bucket in (2, 4, 8)
    assert f.num_buckets * f.slots_per_bucket >= f.capacity
    assert f.size_in_bytes * 8 >= f.num_buckets * f.slots_per_bucket * f.fingerprint_bits
    assert f.growing is False and f.doublings == 0
    assert f.concurrent is concurrent
    f.update(range(5000))
    assert f.load_factor == pytest.approx(5000 / (f.num_buckets * f.slots_per_bucket))
    assert 0 < f.expected_fpr < f.fpr
    assert "CuckooFilter(size=5000" in repr(f)


def test_lower_rate_takes_more_memory():
    loose = ccf.CuckooFilter(100_000, 0.05)
    tight = ccf.CuckooFilter(100_000, 0.00001)
    assert tight.size_in_bytes > loose.size_in_bytes
    assert tight.fpr <= 0.00001 < loose.fpr <= 0.05


def test_clear(concurrent):
    f = ccf.CuckooFilter(1000, concurrent=concurrent)
    f.update(["a", "b", "c"])
    assert len(f) == 3
    f.clear()
    assert len(f) == 0 and "a" not in f


def test_update_generator_and_len():
    f = ccf.CuckooFilter(200_000)
    f.update(str(i) for i in range(100_000))  # more than one batch of the iterable
    assert len(f) == 100_000
    assert all(str(i) in f for i in range(0, 100_000, 997))


@pytest.mark.parametrize("capacity", [0, -5, -(2**70), 2**64, 2**100])
def test_bad_capacity(capacity):
    with pytest.raises(ValueError, match="capacity"):
        ccf.CuckooFilter(capacity)
    with pytest.raises(ValueError, match="initial_capacity"):
        ccf.GrowingCuckooFilter(capacity)


@pytest.mark.parametrize("fpr", [0.0, -0.1, 0.51, 1.0, float("nan"), float("inf")])
def test_bad_fpr(fpr):
    with pytest.raises(ValueError, match="fpr"):
        ccf.CuckooFilter(100, fpr)
    with pytest.raises(ValueError, match="fpr"):
        ccf.GrowingCuckooFilter(100, fpr)


def test_bad_fpr_message_gives_the_value_as_python_writes_it():
    # A stream's six digits wrote 0.50000001 as 0.5, a value inside the range it named.
    with pytest.raises(ValueError, match=r"not 0\.50000001$"):
        ccf.CuckooFilter(100, 0.50000001)


def test_integer_arguments_out_of_range_are_value_errors():
    # Too large for the table or the machine, or for the argument's type: ValueError either way.
    for capacity in (2**62, 2**63, 2**64 - 1):
        with pytest.raises(ValueError, match="capacity"):
            ccf.CuckooFilter(capacity)
    for seed in (-1, 2**64):
        with pytest.raises(ValueError, match="seed"):
            ccf.CuckooFilter(100, seed=seed)
        with pytest.raises(ValueError, match="seed"):
            ccf.GrowingCuckooFilter(100, seed=seed)
    with pytest.raises(ValueError, match="max_doublings"):
        ccf.GrowingCuckooFilter(100, max_doublings=-1)
    assert ccf.CuckooFilter(100, seed=2**64 - 1).seed == 2**64 - 1
    assert ccf.CuckooFilter(np.uint64(100)).capacity >= 100  # any integer with __index__


def test_bad_argument_types():
    with pytest.raises(TypeError):
        ccf.CuckooFilter("100")
    with pytest.raises(TypeError):
        ccf.CuckooFilter(100.0)
    with pytest.raises(TypeError):
        ccf.CuckooFilter(100, 0.01, True)  # concurrent is keyword-only
    with pytest.raises(TypeError):
        ccf.Filter()


def test_instance_made_by_new_alone_raises():
    # An instance from cls.__new__(cls), never initialised, once handed its methods uninitialised
    # memory: len() or add() crashed the interpreter.
    class Sub(ccf.CuckooFilter):
        pass

    for cls in (ccf.CuckooFilter, ccf.GrowingCuckooFilter, Sub):
        f = cls.__new__(cls)
        calls = [len, repr, bytes, lambda f: f.add(1), lambda f: 1 in f, lambda f: f.capacity,
                 lambda f: f.add_many([1, 2]), lambda f: f.clear(), lambda f: f.__reduce__()]
        for call in calls:
            with pytest.raises(TypeError, match=f"this {cls.__qualname__} holds no filter"):
                call(f)
    s = Sub(100)  # an initialised instance of the subclass works
    s.add(7)
    assert 7 in s and len(s) == 1


def test_concurrent_must_be_a_bool(tmp_path):
    # pybind11 took any object's truth value: concurrent=None or 0.0 made a sequential filter.
    data = bytes(ccf.CuckooFilter(100))
    path = tmp_path / "f.ccf"
    path.write_bytes(data)
    calls = [
        lambda c: ccf.CuckooFilter(100, concurrent=c),
        lambda c: ccf.GrowingCuckooFilter(100, concurrent=c),
        lambda c: ccf.CuckooFilter.frombytes(data, concurrent=c),
        lambda c: ccf.loads(data, concurrent=c),
        lambda c: ccf.load(path, concurrent=c),
    ]
    for call in calls:
        for bad in (None, 0, 1, 0.0, "yes", []):
            with pytest.raises(TypeError, match="concurrent must be a bool"):
                call(bad)
        assert call(True).concurrent is True and call(False).concurrent is False
        assert call(np.bool_(False)).concurrent is False


def test_str_that_is_not_utf8():
    f = ccf.CuckooFilter(100)
    with pytest.raises(UnicodeEncodeError):
        f.add("\ud800")  # a lone surrogate has no UTF-8 encoding
    assert issubclass(UnicodeEncodeError, ValueError)
    with pytest.raises(UnicodeEncodeError):
        f.add_many(["ok", "\udfff"])
    assert len(f) == 1 and "ok" in f


def test_a_str_item_keeps_its_size():
    # The UTF-8 encoding of a non-ASCII str was cached inside it for as long as it lived.
    items = ["\u00e9t\u00e9 %d" % i for i in range(1000)] + ["plain %d" % i for i in range(1000)]
    sizes = [sys.getsizeof(s) for s in items]
    f = ccf.CuckooFilter(10_000)
    f.add(items[0])
    f.add_many(items)
    assert all(s in f for s in items)
    assert f.contains_many(items).all()
    assert [sys.getsizeof(s) for s in items] == sizes
    assert "\u00e9t\u00e9 5" in f and "\u00e9t\u00e9 5".encode() in f


def test_unreachable_rate_is_value_error():
    with pytest.raises(ValueError):
        ccf.CuckooFilter(100, 1e-300)


def test_full_filter_raises():
    f = ccf.CuckooFilter(100, concurrent=False)
    with pytest.raises(ccf.FilterFullError) as info:
        for i in range(100_000):
            f.add(i)
    assert isinstance(info.value, Exception)
    assert info.value.inserted == 0
    assert 100 <= len(f) < 100_000
    n = len(f)
    assert all(i in f for i in range(n))  # nothing added before is lost
    assert not issubclass(ccf.FilterFullError, ValueError)


def test_signatures_name_python_types():
    """help() shows each argument's Python type, not the binding's internal one."""
    docs = [
        (ccf.CuckooFilter.__init__, ["capacity: int", "seed: int"]),
        (ccf.GrowingCuckooFilter.__init__, ["initial_capacity: int", "max_doublings: int"]),
        (ccf.Filter.add, ["item: int | str | bytes | Buffer"]),
        (ccf.Filter.__contains__, ["item: int | str | bytes | Buffer"]),
        (ccf.Filter.add_many, ["items: numpy.ndarray | Iterable"]),
        (ccf.Filter.save, ["path: str | bytes | os.PathLike"]),
        (ccf.load, ["path: str | bytes | os.PathLike"]),
        (ccf.loads, ["data: Buffer"]),
        (ccf.CuckooFilter.frombytes, ["data: Buffer"]),
    ]
    for function, wanted in docs:
        doc = function.__doc__
        assert "handle" not in doc, doc
        for text in wanted:
            assert text in doc, (text, doc)
