"""Filters survive DEBUG RELOAD, restarts from RDB and AOF, DUMP/RESTORE and COPY; bad RDB
payloads are errors, not crashes."""
import os
import random

import pytest
import redis

from redis_harness import (DEFAULTS_A, DEFAULTS_B, Server, canonical, dump_bytes, filters,
                           make_filters_with_defaults, wait_until)

ITEMS = [f"p{i}" for i in range(20_000)]


def populate(r):
    cf = r.cf()
    cf.create("static", 30_000, expansion=0, bucket_size=2)
    cf.create("grow", 100)  # doubles many times
    for i in range(0, len(ITEMS), 2000):
        cf.insert("static", ITEMS[i:i + 2000])
        cf.insert("grow", ITEMS[i:i + 2000])
    cf.delete("static", "p1")
    cf.delete("grow", "p2")
    prefix = dump_bytes(r, "static")[:200]  # the start of a dump, never finished
    assert r.execute_command("CF.LOADCHUNK", "pending", len(prefix) + 1, prefix) == b"OK"
    return {k: canonical(dump_bytes(r, k)) for k in ("static", "grow")}


def check(r, dumps):
    for key, expected in dumps.items():
        assert canonical(dump_bytes(r, key)) == expected, key
        assert all(r.cf().mexists(key, *ITEMS[3:1000]))
    assert r.cf().info("static").deletedNum == 1
    with pytest.raises(redis.ResponseError, match="being restored"):
        r.cf().exists("pending", "x")


def test_debug_reload():
    with Server(module_args=["CHUNK_SIZE", "4096"]) as s:
        r = s.client()
        dumps = populate(r)
        assert r.execute_command("DEBUG", "RELOAD") == b"OK"
        check(r, dumps)


def test_restart_from_rdb():
    with Server(save=True) as s:
        r = s.client()
        dumps = populate(r)
        assert r.save()
        s.restart()
        r = s.client()
        assert r.dbsize() == 3
        check(r, dumps)


def aof_idle(r):
    p = r.info("persistence")
    return p["aof_rewrite_in_progress"] == 0 and p["aof_rewrite_scheduled"] == 0


# 120 bytes, the smallest chunk: a dump's first chunk holds the module's header and the filter's.
@pytest.mark.parametrize("chunk_size", ["4096", "120"])
def test_restart_from_aof_log_and_rewrite(chunk_size):
    with Server("--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "no",
                module_args=["CHUNK_SIZE", chunk_size]) as s:
        r = s.client()
        assert wait_until(lambda: aof_idle(r))
        dumps = populate(r)
        # Failed writes stay out of the log: replayed, they stopped the AOF from loading (with
        # propagation-error-behavior panic) or logged errors.
        r.execute_command("CF.RESERVE", "tiny", 4, "EXPANSION", 0, "BUCKETSIZE", 2)
        with pytest.raises(redis.ResponseError, match="(?i)full"):
            for i in range(100):
                r.cf().add("tiny", f"t{i}")
        tiny = canonical(dump_bytes(r, "tiny"))
        s.args += ["--propagation-error-behavior", "panic"]
        s.restart()  # replays the logged commands
        r = s.client()
        check(r, dumps)
        assert canonical(dump_bytes(r, "tiny")) == tiny
        r.execute_command("BGREWRITEAOF")
        assert wait_until(lambda: aof_idle(r), timeout=30)
        aof_dir = os.path.join(s.dir, "appendonlydir")
        text = b"".join(open(os.path.join(aof_dir, f), "rb").read() for f in os.listdir(aof_dir))
        assert b"CF.LOADCHUNK" in text and b"CF.INSERT" not in text
        s.restart()  # loads the rewritten file: CF.LOADCHUNK commands
        r = s.client()
        check(r, dumps)


def test_an_aof_log_makes_the_same_filters_under_other_defaults():
    # The log held the commands that made filters from the module's defaults as given: a restart
    # with other DEFAULT_CAPACITY or DEFAULT_ERROR made other filters from it. It now holds the
    # CF.RESERVE that makes each one.
    with Server("--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "no",
                module_args=DEFAULTS_A) as s:
        r = s.client()
        assert wait_until(lambda: aof_idle(r))
        make_filters_with_defaults(r)
        expected = filters(r)
        s.module_args = DEFAULTS_B
        s.args += ["--propagation-error-behavior", "panic"]
        s.restart()  # replays the log, never rewritten
        r = s.client()
        assert filters(r) == expected


def test_inserts_that_change_nothing_stay_out_of_the_aof():
    # CF.INSERT and CF.INSERTNX were logged even when every item was there already or refused.
    with Server("--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "no",
                "--propagation-error-behavior", "panic") as s:
        r = s.client()
        assert wait_until(lambda: aof_idle(r))
        r.execute_command("CF.RESERVE", "tiny", 4, "EXPANSION", 0, "BUCKETSIZE", 2)
        # Two buckets of 2 hold 4 copies of an item; the 5th is refused.
        assert r.execute_command("CF.INSERT", "tiny", "ITEMS", *["u"] * 5) == [1, 1, 1, 1, -1]
        size = r.info("persistence")["aof_current_size"]
        assert r.execute_command("CF.INSERTNX", "tiny", "ITEMS", "u") == [0]
        assert r.execute_command("CF.INSERT", "tiny", "ITEMS", "u", "u") == [-1, -1]
        assert r.info("persistence")["aof_current_size"] == size
        tiny = dump_bytes(r, "tiny")
        s.restart()
        assert dump_bytes(s.client(), "tiny") == tiny


def test_a_chunk_size_too_small_for_a_dumps_headers_is_refused_at_load():
    # With 64 to 119 bytes the module loaded, and an AOF rewrite wrote dumps whose first chunks
    # CF.LOADCHUNK refused: the filters were gone after the next restart.
    for size in ("119", "64"):
        with pytest.raises(RuntimeError, match="CHUNK_SIZE must be at least 120 bytes"):
            Server(module_args=["CHUNK_SIZE", size])


def test_a_chunk_size_past_the_longest_argument_is_taken_as_that():
    # Past 512 MiB (Redis's default proto-max-bulk-len) CF.SCANDUMP gave chunks CF.LOADCHUNK could
    # not take; a server configured so still starts, with 512 MiB chunks.
    with Server(module_args=["CHUNK_SIZE", str((1 << 30) + 1)]) as s:
        assert s.client().cf().add("f", "x") == 1
        assert "CHUNK_SIZE 1073741825 is taken as 536870912 bytes" in s.log()


def test_a_default_error_no_filter_reaches_is_refused_at_load():
    # The module loaded, and then every CF.ADD and CF.INSERT of a new key failed.
    for rate in ("1e-300", "1e-9"):
        with pytest.raises(RuntimeError, match="DEFAULT_ERROR"):
            Server(module_args=["DEFAULT_ERROR", rate])
    with Server(module_args=["DEFAULT_ERROR", "1e-7"]) as s:
        assert s.client().cf().add("new", "x") == 1


def test_a_default_capacity_of_gigabytes_is_logged_at_load():
    # DEFAULT_CAPACITY 2^32 (a typo for 2^12) was taken silently, and each CF.ADD of a new key
    # then took 15 GB. The server still starts (a deliberate setting); its log says what it costs.
    with Server(module_args=["DEFAULT_CAPACITY", str(1 << 32)]) as s:
        assert s.client().cf().create("small", 100)
        assert ("DEFAULT_CAPACITY 4294967296: each filter CF.ADD or CF.INSERT creates for a "
                "missing key takes about 14336 MiB") in s.log()
    with Server(module_args=["DEFAULT_CAPACITY", "100000"]) as s:
        assert s.client().cf().add("new", "x") == 1
        assert "DEFAULT_CAPACITY" not in s.log()


def test_dump_restore_copy_memory_usage():
    with Server() as s:
        r = s.client()
        dumps = populate(r)
        payload = r.dump("grow")
        assert r.restore("grow2", 0, payload) == b"OK"
        assert canonical(dump_bytes(r, "grow2")) == dumps["grow"]
        assert r.copy("static", "static2")
        assert canonical(dump_bytes(r, "static2")) == dumps["static"]
        r.cf().add("static2", "only-in-copy")
        assert r.cf().exists("static", "only-in-copy") == 0
        small = r.cf().create("small", 100, expansion=0) and r.memory_usage("small")
        big = r.memory_usage("static")
        assert small < 2000 < 30_000 < big < 200_000
        assert r.memory_usage("pending") < 10_000
        # A small growing filter keeps its items' hashes (16 bytes and more each) besides its
        # table: MEMORY USAGE counts them (it reported the table alone, a tenth of the bytes).
        r.cf().insert("kept", [f"k{i}" for i in range(900)])
        assert r.cf().info("kept").size < 2000
        assert r.memory_usage("kept") > 900 * 16


def crc64(data):
    """Redis's CRC-64 (Jones polynomial, reflected), which ends every DUMP payload."""
    poly = 0x95AC9329AC4BC9B5
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    crc = 0
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def test_bad_restore_payloads_are_errors():
    with Server() as s:
        r = s.client()
        r.cf().insert("f", ITEMS[:3000])
        payload = r.dump("f")
        assert crc64(payload[:-8]).to_bytes(8, "little") == payload[-8:]
        rng = random.Random(11)
        # Random bytes: Redis's checksum refuses them.
        for n in (0, 10, 1000):
            with pytest.raises(redis.ResponseError):
                r.restore("bad", 0, bytes(rng.getrandbits(8) for _ in range(n)))
        # A payload with a valid checksum whose module data is damaged: rdb_load refuses it.
        body = payload[:-10]
        for pos in list(range(9, 120)) + rng.sample(range(120, len(body)), 40):
            broken = bytearray(body)
            broken[pos] ^= 1 << rng.randrange(8)
            broken += payload[-10:-8]
            broken += crc64(bytes(broken)).to_bytes(8, "little")
            try:
                r.restore("bad", 0, bytes(broken), replace=True)
            except redis.ResponseError:
                continue
            # A flip the loader cannot see (e.g. in a kept hash that no lookup uses) is tolerated,
            # but the result must still be a working filter.
            r.cf().exists("bad", "x")
        # Truncated module data with a valid checksum.
        for cut in (20, len(body) // 2, len(body) - 3):
            broken = bytearray(body[:cut]) + payload[-10:-8]
            broken += crc64(bytes(broken)).to_bytes(8, "little")
            with pytest.raises(redis.ResponseError):
                r.restore("bad2", 0, bytes(broken))
        assert r.ping()
        assert all(r.cf().mexists("f", *ITEMS[:3000]))
