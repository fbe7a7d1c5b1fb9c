"""Files and bytes: save/load, bytes/frombytes, pickling, corrupt input, the ccf tool."""

import copy
import os
import pathlib
import pickle
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ccf

WORDS = [f"key-{i}" for i in range(5000)]
OTHERS = [f"other-{i}" for i in range(20000)]


def filled(kind, concurrent=True):
    if kind == "growing":
        f = ccf.GrowingCuckooFilter(500, 0.01, concurrent=concurrent)
    else:
        f = ccf.CuckooFilter(len(WORDS), 0.01, concurrent=concurrent)
    f.update(WORDS)
    return f


def answers(f, keys):
    return f.contains_many(keys).tolist()


@pytest.mark.parametrize("kind", ["static", "growing"])
def test_save_load(tmp_path, kind):
    f = filled(kind)
    path = tmp_path / "f.ccf"
    f.save(path)
    for p in (path, str(path), bytes(path)):
        g = ccf.load(p)
        assert type(g) is type(f)
        assert len(g) == len(f) and g.capacity == f.capacity
        assert g.fingerprint_bits == f.fingerprint_bits and g.growing == f.growing
        assert answers(g, WORDS + OTHERS) == answers(f, WORDS + OTHERS)
    assert path.read_bytes()[:80] == bytes(f)[:80]
    if kind == "static":
        assert path.read_bytes() == bytes(f)
    seq = ccf.load(path, concurrent=False)
    assert seq.concurrent is False and answers(seq, OTHERS) == answers(f, OTHERS)


@pytest.mark.parametrize("kind", ["static", "growing"])
def test_bytes_round_trip(kind):
    f = filled(kind)
    data = bytes(f)
    assert data[:8] == b"CCFILTER"
    cls = type(f)
    for buf in (data, bytearray(data), memoryview(data)):
        g = cls.frombytes(buf)
        assert type(g) is cls
        assert answers(g, WORDS + OTHERS) == answers(f, WORDS + OTHERS)
    # Any C-contiguous buffer, in any number of dimensions; a strided one is refused.
    rows = np.frombuffer(data, np.uint8).reshape(1, -1)
    assert bytes(ccf.loads(rows)) == data
    with pytest.raises(TypeError, match="contiguous"):
        ccf.loads(np.frombuffer(data + data, np.uint8)[::2])
    again = bytes(ccf.loads(data))
    assert again == data  # kept hashes of a growing filter are saved in increasing order
    other = ccf.GrowingCuckooFilter if cls is ccf.CuckooFilter else ccf.CuckooFilter
    with pytest.raises(ValueError, match="frombytes"):
        other.frombytes(data)


@pytest.mark.parametrize("kind", ["static", "growing"])
@pytest.mark.parametrize("concurrent", [True, False])
def test_pickle_and_copy(kind, concurrent):
    f = filled(kind, concurrent)
    for g in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f)):
        assert type(g) is type(f) and g is not f
        assert g.concurrent is concurrent
        assert len(g) == len(f) and g.capacity == f.capacity and g.seed == f.seed
        assert answers(g, WORDS + OTHERS) == answers(f, WORDS + OTHERS)
        if kind == "static":
            assert bytes(g) == bytes(f)
        g.add("only-in-copy")
        assert len(g) == len(f) + 1  # an independent filter


class Tagged(ccf.CuckooFilter):
    """A subclass whose instances carry attributes."""


class TaggedGrowing(ccf.GrowingCuckooFilter):
    pass


class Slotted(ccf.CuckooFilter):
    __slots__ = ("tag",)


@pytest.mark.parametrize("cls", [Tagged, TaggedGrowing])
@pytest.mark.parametrize("concurrent", [True, False])
def test_pickle_copy_and_frombytes_keep_a_subclass(cls, concurrent):
    # They gave the base class, and dropped the instance's attributes.
    f = cls(1000, concurrent=concurrent)
    f.update(WORDS[:500])
    f.note = ["kept"]
    protocols = (0, 2, pickle.HIGHEST_PROTOCOL)
    copies = [pickle.loads(pickle.dumps(f, protocol)) for protocol in protocols]
    copies += [copy.copy(f), copy.deepcopy(f)]
    assert repr(f).startswith(cls.__qualname__ + "(size=500,")
    for g in copies:
        assert type(g) is cls and g is not f
        assert g.concurrent is concurrent and g.note == ["kept"]
        assert answers(g, WORDS + OTHERS) == answers(f, WORDS + OTHERS)
        g.add("only-in-copy")
        assert len(g) == len(f) + 1  # an independent filter
    assert copies[3].note is f.note and copies[4].note is not f.note
    g = cls.frombytes(bytes(f), concurrent=concurrent)
    assert type(g) is cls and g.concurrent is concurrent and not hasattr(g, "note")
    assert answers(g, WORDS + OTHERS) == answers(f, WORDS + OTHERS)
    # A filter of the other class is not made an instance of this one.
    other = ccf.CuckooFilter(100) if f.growing else ccf.GrowingCuckooFilter(100)
    with pytest.raises(ValueError, match="frombytes"):
        cls.frombytes(bytes(other))
    with pytest.raises(ValueError, match=cls.__name__):
        ccf._restore(bytes(other), True, cls)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="object.__getstate__ keeps slots")
def test_pickle_keeps_the_slots_of_a_subclass():
    f = Slotted(100)
    f.add("x")
    f.tag = "slot"
    for g in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f)):
        assert type(g) is Slotted and g.tag == "slot" and "x" in g


def test_pickles_of_the_base_classes_and_earlier_pickles():
    f = filled("static")
    # The base classes pickle as earlier versions did (and read): ccf._restore(data, concurrent).
    assert f.__reduce__()[1] == (bytes(f), f.concurrent) and len(f.__reduce__()) == 2
    # A pickle made before the class travelled names ccf._restore(data, concurrent).
    g = ccf._restore(bytes(f), False)
    assert type(g) is ccf.CuckooFilter and g.concurrent is False and bytes(g) == bytes(f)


def test_corrupt_bytes():
    data = bytearray(bytes(filled("static")))
    with pytest.raises(ccf.FormatError):
        ccf.loads(b"")
    with pytest.raises(ccf.FormatError):
        ccf.loads(b"not a filter at all, not even close" * 4)
    with pytest.raises(ccf.FormatError):
        ccf.CuckooFilter.frombytes(bytes(data[:-1]))  # truncated
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x40  # a payload bit: the checksum catches it
    with pytest.raises(ccf.FormatError):
        ccf.loads(flipped)
    bad_version = bytearray(data)
    bad_version[8] = 99
    with pytest.raises(ValueError):
        ccf.loads(bad_version)
    assert issubclass(ccf.FormatError, ValueError)
    with pytest.raises(TypeError):
        ccf.loads("a str is not bytes")


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        ccf.load(tmp_path / "missing.ccf")
    with pytest.raises(OSError):
        filled("static").save(tmp_path / "no-such-dir" / "f.ccf")
    (tmp_path / "junk.ccf").write_bytes(b"junk" * 100)
    with pytest.raises(ccf.FormatError):
        ccf.load(tmp_path / "junk.ccf")
    # A null byte cuts a path short for the OS: refused, as open() refuses it.
    good = tmp_path / "good.ccf"
    filled("static").save(good)
    with pytest.raises(ValueError, match="null byte"):
        filled("static").save(str(good) + "\0.bak")
    with pytest.raises(ValueError, match="null byte"):
        ccf.load(str(good) + "\0anything")
    # A path that opens but cannot be read is an OSError, not a FormatError.
    with pytest.raises(IsADirectoryError):
        ccf.load(tmp_path)


@pytest.mark.parametrize("concurrent", [True, False])
def test_load_and_save_open_files_without_the_gil(tmp_path, concurrent):
    # A FIFO opens when its other end does: ccf.load opened it holding the GIL, and the Python
    # thread that was to write into it never ran (a deadlock).
    import os
    import threading
    f = filled("static", concurrent)
    data = bytes(f)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    loaded = ccf.load(fifo, concurrent=concurrent)
    writer.join(timeout=20)
    assert bytes(loaded) == data
    # Saving into a FIFO that a Python thread reads: a filter larger than the pipe's buffer waits
    # for the reader while it writes, not only while it opens.
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    large = ccf.CuckooFilter(200_000, 0.001, concurrent=concurrent)
    large.update(WORDS)
    assert len(bytes(large)) > 1 << 18
    large.save(fifo)
    reader.join(timeout=20)
    assert got == [bytes(large)]


def test_a_failed_write_is_an_oserror():
    for concurrent in (True, False):
        with pytest.raises(OSError):
            filled("static", concurrent).save("/dev/full")  # it was a RuntimeError


BYTES_PEAK = """
import resource, sys
import numpy as np
import ccf
f = ccf.{cls}({capacity}, concurrent={concurrent})
f.add_many(np.arange(1 << 20, dtype=np.uint64))  # touches every page of the table
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
b = bytes(f)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
g = ccf.loads(b)
assert len(g) == len(f) and 12345 in g and bytes(g) == b
print((after - before) * 1024 / len(b))
"""


@pytest.mark.parametrize("cls, capacity", [("CuckooFilter", 40_000_000),
                                           ("GrowingCuckooFilter", 20_000_000)])
@pytest.mark.parametrize("concurrent", [True, False])
def test_bytes_of_a_filter_takes_its_size_once(cls, capacity, concurrent):
    # bytes(f) (and a pickle) made the file in a vector and then copied it into the bytes object:
    # its peak was twice the file's size (1.88 times here, of 72 MB), now once (0.89).
    script = textwrap.dedent(BYTES_PEAK).format(cls=cls, capacity=capacity, concurrent=concurrent)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 1.4, "peak memory of bytes(f) / its length: " + out.stdout


FILL_THEN_SAVE = """
import os, resource, sys
import ccf
f = ccf.{cls}(200_000, 0.001, concurrent={concurrent})
f.add_many(range(1000))
assert len(bytes(f)) > 1 << 18
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, hard))  # writes past 64 KiB fail: EFBIG
try:
    f.save(sys.argv[1])
except OSError as e:
    print(e.errno == __import__("errno").EFBIG, e.filename == sys.argv[1])
"""


@pytest.mark.parametrize("cls", ["CuckooFilter", "GrowingCuckooFilter"])
@pytest.mark.parametrize("concurrent", [True, False])
def test_a_save_that_fails_partway_leaves_the_old_file(tmp_path, cls, concurrent):
    # The save wrote into the file itself: a failure partway (a full disk, a size limit) left a
    # truncated file where the old filter was.
    path = tmp_path / "f.ccf"
    old = filled("static")
    old.save(path)
    os.chmod(path, 0o640)
    script = textwrap.dedent(FILL_THEN_SAVE).format(cls=cls, concurrent=concurrent)
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
    assert path.read_bytes() == bytes(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ccf"]  # no temporary file left


@pytest.mark.parametrize("concurrent", [True, False])
def test_save_waits_for_the_lock_the_tool_takes(tmp_path, concurrent):
    # The ccf tool's add, remove and build hold an flock on the file while they change it; a save
    # took no lock, and a change that had read the file renamed its own over the saved one.
    import fcntl
    import threading
    path = tmp_path / "f.ccf"
    ccf.CuckooFilter(100).save(path)
    f = ccf.CuckooFilter(100, concurrent=concurrent)
    f.add("from python")
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = threading.Event()
        saver = threading.Thread(target=lambda: (f.save(path), done.set()))
        saver.start()
        assert not done.wait(0.5), "the save did not wait for the lock"
        assert "from python" not in ccf.load(path)
    finally:
        os.close(fd)  # releases the lock
    assert done.wait(30)
    saver.join()
    assert "from python" in ccf.load(path)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".ccf-save")]


def test_save_replaces_a_file_whole(tmp_path, monkeypatch):
    f, g = filled("static"), filled("growing")
    path = tmp_path / "f.ccf"
    f.save(path)
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as open() makes a file
    os.chmod(path, 0o604)
    g.save(path)  # keeps the mode of the file it replaces
    assert path.read_bytes() == bytes(g) and stat.S_IMODE(path.stat().st_mode) == 0o604
    # A symbolic link stays: the file it names is replaced.
    link = tmp_path / "link.ccf"
    link.symlink_to(path.name)
    f.save(link)
    assert link.is_symlink() and path.read_bytes() == bytes(f)
    # A path relative to the working directory.
    monkeypatch.chdir(tmp_path)
    g.save("relative.ccf")
    assert (tmp_path / "relative.ccf").read_bytes() == bytes(g)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ccf", "link.ccf", "relative.ccf"]
    # A save that cannot open its file leaves nothing behind.
    with pytest.raises(IsADirectoryError):
        f.save(tmp_path)
    with pytest.raises(FileNotFoundError):
        f.save(tmp_path / "missing" / "f.ccf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ccf", "link.ccf", "relative.ccf"]


SAVE_AS_ANOTHER_USER = """
import sys
import ccf
f = ccf.GrowingCuckooFilter(1000, concurrent={concurrent})
f.update(range(100))
f.save(sys.argv[1])
sys.stdout.buffer.write(bytes(f))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")
@pytest.mark.parametrize("concurrent", [True, False])
@pytest.mark.parametrize("directory_mode", [0o1777, 0o755])
def test_a_file_that_cannot_be_replaced_is_written_in_place(concurrent, directory_mode):
    # Another user's file in a sticky directory (as /tmp is, 1777) may be written but not renamed
    # over: the save, which renamed its new file over the target, failed with EPERM. In a
    # directory the user may not write (755), the temporary file cannot be made (EACCES).
    import shutil
    import tempfile

    shared = pathlib.Path(tempfile.mkdtemp(dir="/tmp"))
    # A copy of the package that the other user can read (the build directory may be private).
    package = pathlib.Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        shutil.copytree(pathlib.Path(ccf.__file__).parent, package / "ccf")
        for place in [package, *package.rglob("*")]:
            os.chmod(place, 0o755)
        os.chmod(shared, directory_mode)
        path = shared / "f.ccf"
        filled("static").save(path)
        os.chmod(path, 0o666)  # root's file, which every user may write

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)

        script = textwrap.dedent(SAVE_AS_ANOTHER_USER).format(concurrent=concurrent)
        out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                             timeout=60, preexec_fn=as_nobody, cwd=str(shared),
                             env={**os.environ, "PYTHONPATH": str(package)})
        assert out.returncode == 0, out.stderr.decode()
        assert path.read_bytes() == out.stdout
        assert path.stat().st_uid == 0  # the same file, written in place
        assert sorted(p.name for p in shared.iterdir()) == ["f.ccf"]  # no temporary file left
    finally:
        shutil.rmtree(shared)
        shutil.rmtree(package)


def write_keys(path: pathlib.Path, keys):
    path.write_text("".join(k + "\n" for k in keys))
    return path


def tool_answers(tool, filter_path, keys_path):
    """The tool's answer for each key of keys_path (`ccf query --all`), in order."""
    out = tool("query", filter_path, "-k", keys_path, "--all", check=False)
    assert out.returncode in (0, 1), out.stderr
    lines = out.stdout.decode().splitlines()
    return [line.startswith("1\t") for line in lines], [line[2:] for line in lines]


@pytest.mark.parametrize("grow", [False, True])
def test_tool_built_filter_loads_in_python(tool, tmp_path, grow):
    keys = write_keys(tmp_path / "keys.txt", WORDS)
    queries = write_keys(tmp_path / "queries.txt", WORDS[:1000] + OTHERS)
    args = ["build", "-k", keys, "-o", tmp_path / "f.ccf", "--fpr", "0.01", "-q"]
    tool(*(args + (["--grow", "--capacity", "300"] if grow else [])))
    f = ccf.load(tmp_path / "f.ccf")
    assert f.growing is grow and len(f) == len(WORDS)
    assert f.contains_many(WORDS).all()
    expected, echoed = tool_answers(tool, tmp_path / "f.ccf", queries)
    assert echoed == WORDS[:1000] + OTHERS
    assert answers(f, WORDS[:1000] + OTHERS) == expected
    assert 0 < sum(expected[1000:]) < len(OTHERS) * 0.05  # some false positives, not many


@pytest.mark.parametrize("kind", ["static", "growing"])
def test_python_saved_filter_read_by_tool(tool, tmp_path, kind):
    f = filled(kind)
    f.save(tmp_path / "f.ccf")
    queries = write_keys(tmp_path / "queries.txt", WORDS + OTHERS)
    expected, _ = tool_answers(tool, tmp_path / "f.ccf", queries)
    assert all(expected[: len(WORDS)])
    assert expected == answers(f, WORDS + OTHERS)
    info = tool("info", tmp_path / "f.ccf").stdout.decode()
    assert str(len(f)) in info


def test_tool_add_then_python_sees_it(tool, tmp_path):
    f = ccf.CuckooFilter(1000)
    f.add("from-python")
    f.save(tmp_path / "f.ccf")
    tool("add", tmp_path / "f.ccf", "from-the-tool", "-q")
    g = ccf.load(tmp_path / "f.ccf")
    assert "from-python" in g and "from-the-tool" in g and len(g) == 2
    # int keys are their 8 bytes: a key of the tool with those bytes is the int
    assert g.hash(0x6F2D6D6F7266) == g.hash(b"from-o\x00\x00")


def test_seed_is_kept(tool, tmp_path):
    keys = write_keys(tmp_path / "keys.txt", WORDS[:100])
    tool("build", "-k", keys, "-o", tmp_path / "f.ccf", "--seed", "77", "-q")
    f = ccf.load(tmp_path / "f.ccf")
    assert f.seed == 77
    assert f.contains_many(WORDS[:100]).all()
    g = ccf.CuckooFilter(100, seed=77)
    assert g.hash("key-1") == f.hash("key-1") != ccf.CuckooFilter(100).hash("key-1")
    assert np.asarray(f.contains_many(WORDS[:100])).sum() == 100
