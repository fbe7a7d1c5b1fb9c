"""Threads: a concurrent filter runs batches of several Python threads at once (the GIL is
released); a sequential filter keeps the GIL, so its calls never overlap."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ccf

N = 3_000_000  # items per thread: each add_many takes a good fraction of a second


def two_threads(f, call):
    """Thread A starts call(f, 0) and signals; thread B waits 50 ms, then runs call(f, 1).
    Returns the (start, end) perf_counter times of each call."""
    times = [None, None]
    a_started = threading.Event()
    errors = []

    def run(i):
        try:
            if i == 1:
                a_started.wait()
                time.sleep(0.05)  # A is inside its call by now
            start = time.perf_counter()
            if i == 0:
                a_started.set()
            call(f, i)
            times[i] = (start, time.perf_counter())
        except BaseException as e:  # reported by the test
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return times


def ranges():
    return [np.arange(i * N, (i + 1) * N, dtype=np.uint64) for i in (0, 1)]


def test_concurrent_add_many_overlaps_and_loses_nothing():
    f = ccf.CuckooFilter(2 * N, 0.001, concurrent=True)
    keys = ranges()
    (a_start, a_end), (b_start, b_end) = two_threads(f, lambda f, i: f.add_many(keys[i]))
    # B began its call while A was still inside its own: both ran in C++ at once, which only
    # happens when add_many releases the GIL.
    assert a_start < b_start < a_end
    assert min(a_end, b_end) - b_start > 0
    assert len(f) == 2 * N
    assert f.contains_many(keys[0]).all() and f.contains_many(keys[1]).all()


def test_concurrent_contains_many_overlaps():
    f = ccf.CuckooFilter(N, 0.01, concurrent=True)
    keys = ranges()[0]
    f.add_many(keys)
    # Lookups run several times faster than inserts: 5 passes over the keys make each call last
    # well past B's 50 ms wait.
    queries = np.tile(keys, 5)
    results = [None, None]

    def call(f, i):
        results[i] = f.contains_many(queries)

    (a_start, a_end), (b_start, _) = two_threads(f, call)
    assert a_start < b_start < a_end
    assert results[0].all() and results[1].all()


def test_sequential_filter_keeps_the_gil():
    f = ccf.CuckooFilter(2 * N, 0.001, concurrent=False)
    keys = ranges()
    (a_start, a_end), (b_start, b_end) = two_threads(f, lambda f, i: f.add_many(keys[i]))
    # B could not run Python code while A was in add_many: its call started after A's ended.
    assert b_start >= a_end
    assert len(f) == 2 * N
    assert f.contains_many(keys[0]).all() and f.contains_many(keys[1]).all()


@pytest.mark.parametrize("growing", [False, True])
def test_many_threads_mixed_work(growing):
    f = ccf.GrowingCuckooFilter(1000) if growing else ccf.CuckooFilter(400_000)
    chunks = [np.arange(i * 50_000, (i + 1) * 50_000, dtype=np.uint64) for i in range(8)]
    barrier = threading.Barrier(4)

    def work(t):
        barrier.wait()
        for c in chunks[t::4]:
            f.add_many(c)
            assert f.contains_many(c).all()
        f.update(str(i) for i in range(t * 1000, (t + 1) * 1000))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(f) == 8 * 50_000 + 4000
    assert f.contains_many(np.concatenate(chunks)).all()
    assert f.contains_many([str(i) for i in range(4000)]).all()


def test_clear_waits_for_running_batches():
    f = ccf.CuckooFilter(N, 0.01, concurrent=True)
    keys = ranges()[0]
    started = threading.Event()

    def adder():
        started.set()
        f.add_many(keys)

    t = threading.Thread(target=adder)
    t.start()
    started.wait()
    time.sleep(0.02)
    f.clear()  # after the batch (whole) or before it: never in its middle
    t.join()
    assert len(f) in (0, N)
    f.clear()
    assert len(f) == 0 and not f.contains_many(keys[:1000]).any()


def run_script(code, timeout=10):
    """Runs code in a fresh interpreter (the test's environment); fails the test if it does not
    end within timeout seconds or ends in an error. Returns its standard output."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the script hung (still running after {timeout} s)")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "call", ["f.add, args=(bytearray(b'x'),)", "f.contains_many, args=([b'x'],)"]
)
def test_first_calls_from_two_threads_before_numpy_is_imported(call):
    # The script imports no numpy itself: the two threads' first calls are the first that need
    # it (a bytearray item; a batch, which tells arrays from other iterables).
    out = run_script(
        f"""
        import sys, threading
        import ccf
        f = ccf.CuckooFilter(1000)
        ts = [threading.Thread(target={call}) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("done", "numpy" in sys.modules)
        """
    )
    assert out.split() == ["done", "True"]


def test_clear_waits_for_a_save_without_the_gil():
    # A save to a FIFO waits for the main thread to read it; a clear waiting meanwhile for the
    # save to end must leave the main thread free to run.
    out = run_script(
        """
        import os, tempfile, threading, time
        import ccf
        path = os.path.join(tempfile.mkdtemp(), "fifo")
        os.mkfifo(path)
        f = ccf.CuckooFilter(1000)
        f.add("x")
        saver = threading.Thread(target=f.save, args=(path,), daemon=True)
        saver.start()
        time.sleep(0.2)  # the save holds the filter, waiting for a reader
        clearer = threading.Thread(target=f.clear, daemon=True)
        clearer.start()
        time.sleep(0.2)  # the clear waits for the save
        with open(path, "rb") as fifo:
            data = fifo.read()
        saver.join()
        clearer.join()
        print(len(f), type(ccf.loads(data)).__name__)
        """
    )
    assert out.split() == ["0", "CuckooFilter"]


@pytest.mark.parametrize("make", ["CuckooFilter(1_000_000)", "GrowingCuckooFilter(100_000)"])
def test_single_item_calls_wait_for_a_save_without_the_gil(make):
    # A save to a FIFO that another Python thread reads holds the filter until the reader has
    # drained it. Single-item calls and property reads meanwhile waited for the save with the
    # GIL held, so the reader never ran again: every Python thread hung.
    out = run_script(
        f"""
        import os, tempfile, threading, time
        import ccf
        path = os.path.join(tempfile.mkdtemp(), "fifo")
        os.mkfifo(path)
        f = ccf.{make}
        f.add_many(range(50_000))
        got, opened = [], threading.Event()
        def read():
            with open(path, "rb") as fifo:  # returns once the save has opened the FIFO
                opened.set()
                time.sleep(0.3)  # the save fills the pipe and waits for this thread
                got.append(fifo.read())
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        saver = threading.Thread(target=f.save, args=(path,), daemon=True)
        saver.start()
        assert opened.wait(5)
        time.sleep(0.05)  # the save streams, and waits for the reader
        f.add("y")
        present = "y" in f
        f.remove("y")
        n, copies, memory, text = len(f), f.count(7), f.memory_in_bytes, repr(f)
        saver.join()
        reader.join()
        g = ccf.loads(got[0])
        print(n, present, copies >= 1, memory > 0, all(i in g for i in range(50_000)))
        """
    )
    assert out.split() == ["50000", "True", "True", "True", "True"]


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_signal_while_a_save_waits_for_a_fifo_reader_does_not_stop_it(concurrent):
    # A signal whose handler raises nothing, while the save's open waits for the FIFO's reader:
    # the save raised InterruptedError, where open() in Python goes on (PEP 475).
    out = run_script(
        f"""
        import os, signal, tempfile, threading, time
        import ccf
        path = os.path.join(tempfile.mkdtemp(), "fifo")
        os.mkfifo(path)
        f = ccf.CuckooFilter(10_000, concurrent={concurrent})
        f.add_many(range(5_000))
        got, handled = [], []
        def read():
            time.sleep(0.5)  # after the signal
            with open(path, "rb") as fifo:
                got.append(fifo.read())
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        signal.signal(signal.SIGALRM, lambda *_: handled.append(1))
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        f.save(path)
        reader.join()
        print(len(handled), got == [bytes(f)])
        """
    )
    assert out.split() == ["1", "True"]


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_signal_while_a_load_waits_for_a_fifo_writer_does_not_stop_it(concurrent):
    # The same for ccf.load, whose open waits for the FIFO's writer: it raised InterruptedError.
    out = run_script(
        f"""
        import os, signal, tempfile, threading, time
        import ccf
        path = os.path.join(tempfile.mkdtemp(), "fifo")
        os.mkfifo(path)
        f = ccf.CuckooFilter(10_000)
        f.add_many(range(5_000))
        data, handled = bytes(f), []
        def write():
            time.sleep(0.5)  # after the signal
            with open(path, "wb") as fifo:
                fifo.write(data)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        signal.signal(signal.SIGALRM, lambda *_: handled.append(1))
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        g = ccf.load(path, concurrent={concurrent})
        writer.join()
        print(len(handled), bytes(g) == data)
        """
    )
    assert out.split() == ["1", "True"]


def test_an_add_that_doubles_a_concurrent_growing_filter_releases_the_gil():
    # The doubling copies the whole table; a single add held the GIL through it, and every other
    # Python thread stopped (0.3 s for a 75 MB table).
    f = ccf.GrowingCuckooFilter(1 << 19, concurrent=True)
    f.add_many(np.arange(int(0.9 * f.capacity) + 1, dtype=np.uint64))
    ticks = [0]
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0)  # lets the GIL go: the other thread runs only when it is let go

    # No forced switches: the ticker runs only while this thread lets the GIL go, and it does
    # not between reading the ticks and the add.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=ticker)
    t.start()
    try:
        next_key = 1 << 40
        during = None
        for _ in range(1 << 20):
            before_doublings, before_ticks = f.doublings, ticks[0]
            f.add(next_key)
            next_key += 1
            if f.doublings > before_doublings:
                during = ticks[0] - before_ticks
                break
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert during is not None, "no add doubled the table"
    assert during > 0, "no other thread ran while an add doubled the table"
    assert all(k in f for k in range(1 << 40, next_key))


def test_bytes_of_a_growing_filter_while_another_thread_adds():
    # bytes(f) writes the file into a bytes object of the size it had: a small growing filter's
    # file keeps every hash, so an add from another thread meanwhile changes that size, and a
    # doubling changes it more. Each bytes(f) must still be one whole file of the filter.
    f = ccf.GrowingCuckooFilter(1000, concurrent=True)
    done = threading.Event()

    def adder():
        for i in range(0, 100_000, 5):  # one table of kept hashes all along
            f.add_many(np.arange(i, i + 5, dtype=np.uint64))
        done.set()

    t = threading.Thread(target=adder)
    t.start()
    sizes = []
    try:
        for _ in range(20_000):
            b = bytes(f)
            g = ccf.loads(b)
            sizes.append(len(g))
            if done.is_set():
                break
    finally:
        t.join()
    assert sizes == sorted(sizes) and sizes[-1] <= 100_000
