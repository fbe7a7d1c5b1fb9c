"""Every CF.* command's replies and errors, through redis-py's cf() and through redis-cli."""
import socket

import pytest
import redis

from redis_harness import HOST, Server, dump_bytes, scandump, wait_until


@pytest.fixture(scope="module")
def server():
    with Server(module_args=["CHUNK_SIZE", "256"]) as s:
        yield s


@pytest.fixture
def r(server):
    client = server.client()
    client.flushall()
    return client


def error_of(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def test_module_listed(r):
    names = [m[b"name"] for m in r.module_list()]
    assert b"ccf" in names


def test_reserve_and_info(r):
    assert r.cf().create("f", 1000, expansion=0, bucket_size=4, max_iterations=50)
    info = r.cf().info("f")
    assert info.bucketSize == 4
    assert info.expansionRate == 0
    assert info.maxIteration == 50
    assert info.filterNum == 1
    assert info.insertedNum == 0 and info.deletedNum == 0
    assert info.bucketNum * 4 >= 1000
    assert info.size > 0


def test_info_field_names_and_order(server, r):
    r.cf().create("f", 100)
    reply = server.cli("CF.INFO", "f").splitlines()  # raw: redis-py parses CF.INFO
    assert reply[0::2] == ["Size", "Number of buckets", "Number of filters",
                           "Number of items inserted", "Number of items deleted",
                           "Bucket size", "Expansion rate", "Max iterations"]
    assert all(v.isdigit() for v in reply[1::2])


def test_reserve_options_any_order(r):
    assert r.execute_command("CF.RESERVE", "a", 500, "EXPANSION", 0, "MAXITERATIONS", 30,
                             "BUCKETSIZE", 2, "ERROR", 0.001) == b"OK"
    info = r.cf().info("a")
    assert (info.bucketSize, info.maxIteration, info.expansionRate) == (2, 30, 0)


def test_reserve_errors(r):
    cf = r.cf()
    assert error_of(cf.create, "x", 0) == "Bad capacity"
    assert error_of(cf.create, "x", -5) == "Bad capacity"
    assert error_of(r.execute_command, "CF.RESERVE", "x", "abc") == "Bad capacity"
    assert "BUCKETSIZE" in error_of(cf.create, "x", 100, None, 0)
    assert "BUCKETSIZE must be 2, 4 or 8" in error_of(cf.create, "x", 100, 0, 3)
    assert "MAXITERATIONS" in error_of(cf.create, "x", 100, None, None, 0)
    assert "EXPANSION" in error_of(cf.create, "x", 100, -1)
    assert "ERROR" in error_of(r.execute_command, "CF.RESERVE", "x", 100, "ERROR", 2)
    # A rate no growing filter reaches names the best one (it printed "at best 0.000000").
    unreachable = error_of(r.execute_command, "CF.RESERVE", "x", 100, "ERROR", 1e-10)
    assert "at best 3.18512e-08" in unreachable
    # The error names the option, not ccf's C++ functions.
    for args in (("ERROR", 1e-300), ("ERROR", 1e-12, "BUCKETSIZE", 2), ("ERROR", 1e-10)):
        error = error_of(r.execute_command, "CF.RESERVE", "x", 100, "EXPANSION", 0, *args)
        assert error.startswith("ERROR rate not reached: no layout ") and "::" not in error, error
    assert "of 2 slots a bucket" in error_of(r.execute_command, "CF.RESERVE", "x", 100,
                                             "EXPANSION", 0, "ERROR", 1e-12, "BUCKETSIZE", 2)
    assert error_of(r.execute_command, "CF.RESERVE", "x", 100, "ERROR", 1e-10).startswith(
        "ERROR rate not reached: a growing filter reaches")
    assert "syntax" in error_of(r.execute_command, "CF.RESERVE", "x", 100, "COLOR", 2)
    assert "wrong number" in error_of(r.execute_command, "CF.RESERVE", "x")
    assert "wrong number" in error_of(r.execute_command, "CF.RESERVE", "x", 100, "EXPANSION")
    assert r.exists("x") == 0
    cf.create("x", 100)
    assert error_of(cf.create, "x", 100) == "item exists"


def test_error_rate_picks_wider_fingerprints(r):
    r.execute_command("CF.RESERVE", "loose", 10000, "EXPANSION", 0, "ERROR", 0.05)
    r.execute_command("CF.RESERVE", "tight", 10000, "EXPANSION", 0, "ERROR", 0.0001)
    assert r.cf().info("tight").size > 1.5 * r.cf().info("loose").size


def test_bucketsize_takes_the_smallest_table_for_the_rate(r):
    # BUCKETSIZE b took a fingerprint width from a bound that ignores the load: naming the bucket
    # size the rate's own layout has doubled the table (1,041,416 bytes where 532,232 did).
    for rate in (0.99, 0.5, 0.05, 0.001):
        r.execute_command("CF.RESERVE", "auto", 1_000_000, "EXPANSION", 0, "ERROR", rate)
        b = r.cf().info("auto").bucketSize
        r.execute_command("CF.RESERVE", "named", 1_000_000, "EXPANSION", 0, "ERROR", rate,
                          "BUCKETSIZE", b)
        assert r.cf().info("named").size == r.cf().info("auto").size, rate
        r.delete("auto", "named")
    # Another bucket size takes its own smallest table that reaches the rate.
    r.execute_command("CF.RESERVE", "two", 1_000_000, "EXPANSION", 0, "ERROR", 0.99,
                      "BUCKETSIZE", 2)
    assert r.cf().info("two").size < 1_300_000


def test_add_exists_count_del(r):
    cf = r.cf()
    assert cf.add("f", "item") == 1  # creates the key
    assert cf.add("f", "item") == 1  # a second copy
    assert cf.exists("f", "item") == 1
    assert cf.exists("f", "other") == 0
    assert cf.count("f", "item") == 2
    assert cf.delete("f", "item") == 1
    assert cf.count("f", "item") == 1
    assert cf.delete("f", "item") == 1
    assert cf.delete("f", "item") == 0
    assert cf.exists("f", "item") == 0
    info = cf.info("f")
    assert info.insertedNum == 0 and info.deletedNum == 2
    assert info.expansionRate == 1  # the default filter grows


def test_addnx(r):
    cf = r.cf()
    assert cf.addnx("f", "a") == 1
    assert cf.addnx("f", "a") == 0
    assert cf.count("f", "a") == 1


def test_missing_keys(r):
    cf = r.cf()
    assert cf.exists("none", "a") == 0
    assert cf.mexists("none", "a", "b") == [0, 0]
    assert cf.count("none", "a") == 0
    assert error_of(cf.delete, "none", "a") == "not found"
    assert error_of(cf.info, "none") == "not found"
    assert error_of(cf.scandump, "none", 0) == "not found"
    assert error_of(cf.insert, "none", ["a"], None, 1) == "not found"
    assert r.exists("none") == 0


def test_insert_and_insertnx(r):
    cf = r.cf()
    assert cf.insert("f", ["a", "b", "a"], capacity=5000) == [1, 1, 1]
    assert cf.count("f", "a") == 2
    assert cf.insertnx("f", ["a", "c", "c"]) == [0, 1, 0]
    assert cf.insert("f", ["d"], nocreate=1) == [1]
    assert cf.mexists("f", "a", "b", "c", "d", "zz") == [1, 1, 1, 1, 0]
    assert "wrong number" in error_of(r.execute_command, "CF.INSERT", "f", "ITEMS")
    assert "wrong number" in error_of(r.execute_command, "CF.INSERT", "f", "CAPACITY", 5)
    assert error_of(r.execute_command, "CF.INSERT", "g", "CAPACITY", 0, "ITEMS", "a") == \
        "Bad capacity"


def test_static_filter_reports_full(r):
    r.execute_command("CF.RESERVE", "small", 8, "EXPANSION", 0, "BUCKETSIZE", 2)
    cap = r.cf().info("small").bucketNum * 2
    results = r.cf().insert("small", [f"k{i}" for i in range(cap + 20)])
    assert results.count(-1) >= 20
    assert set(results) <= {1, -1}
    assert "Filter is full" in error_of(r.cf().add, "small", "one-more")


def test_growing_filter_never_full(r):
    r.cf().create("g", 64)  # EXPANSION 1 by default
    items = [f"k{i}" for i in range(5000)]
    for i in range(0, len(items), 500):
        assert r.cf().insert("g", items[i:i + 500]) == [1] * 500
    assert all(r.cf().mexists("g", *items))
    assert r.cf().info("g").bucketNum > 64


def test_wrongtype(r):
    r.set("s", "v")
    cf = r.cf()
    for call in (lambda: cf.add("s", "a"), lambda: cf.addnx("s", "a"),
                 lambda: cf.exists("s", "a"), lambda: cf.mexists("s", "a"),
                 lambda: cf.count("s", "a"), lambda: cf.delete("s", "a"),
                 lambda: cf.info("s"), lambda: cf.scandump("s", 0),
                 lambda: cf.loadchunk("s", 2, b"x"), lambda: cf.create("s", 10),
                 lambda: cf.insert("s", ["a"])):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            call()
    cf.add("f", "a")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get("f")
    assert r.type("f") == b"ccfcuckoo"


def test_arity(r):
    for cmd in (["CF.ADD", "f"], ["CF.EXISTS", "f"], ["CF.MEXISTS", "f"], ["CF.DEL", "f"],
                ["CF.COUNT", "f"], ["CF.INFO"], ["CF.SCANDUMP", "f"], ["CF.LOADCHUNK", "f", 1],
                ["CF.ADDNX", "f", "a", "b"]):
        assert "wrong number" in error_of(r.execute_command, *cmd)


def test_scandump_loadchunk_round_trip(r):
    cf = r.cf()
    cf.create("src", 2000, expansion=0)
    items = [f"item{i}" for i in range(1500)]
    cf.insert("src", items)
    cf.delete("src", "item0")
    chunks = scandump(r, "src")
    assert len(chunks) > 1  # CHUNK_SIZE 256
    for it, data in chunks:
        assert cf.loadchunk("dst", it, data) == b"OK"
    assert dump_bytes(r, "dst") == dump_bytes(r, "src")
    assert all(cf.mexists("dst", *items[1:]))
    src, dst = cf.info("src"), cf.info("dst")
    assert vars(src) == vars(dst)
    assert dst.deletedNum == 1


def test_scandump_at_any_iterator_is_that_part_of_the_dump(r):
    # CF.SCANDUMP makes only the chunk asked for (it made the whole dump on every call): a chunk
    # at any offset, across the module header, the filter file's header, the table and the
    # trailer, is those bytes of the dump that DUMP's payload holds (made whole, by to_bytes()).
    cf = r.cf()
    cf.insert("grow", [f"x{i}" for i in range(3000)])
    cf.create("static", 3000, expansion=0)
    cf.insert("static", [f"x{i}" for i in range(2000)])
    r.config_set("rdbcompression", "no")  # DUMP's payload then holds the dump's bytes as they are
    try:
        payloads = {key: r.dump(key) for key in ("grow", "static")}
    finally:
        r.config_set("rdbcompression", "yes")
    for key, payload in payloads.items():
        whole = dump_bytes(r, key)
        assert len(whole) > 1000 and whole[:40] in payload and whole[40:] in payload, key
        for offset in (0, 1, 39, 40, 41, 119, 120, 121, 1000, len(whole) - 17, len(whole) - 1):
            it, data = cf.scandump(key, offset + 1)
            assert data == whole[offset:offset + 256], (key, offset)
            assert it == offset + len(data) + 1
        for offset in (len(whole), len(whole) + 1, 2**62, 2**63 - 2):
            assert cf.scandump(key, offset + 1) == [0, None], (key, offset)


def test_loadchunk_refuses_a_filter_and_checks_order(r):
    cf = r.cf()
    cf.insert("src", [f"x{i}" for i in range(3000)])
    chunks = scandump(r, "src")
    # A key holding a filter is refused, as by RedisBloom (its filter was replaced with an OK).
    cf.add("dst", "old")
    kept = dump_bytes(r, "dst")
    with pytest.raises(redis.ResponseError, match="^item exists$"):
        cf.loadchunk("dst", *chunks[0])
    assert dump_bytes(r, "dst") == kept
    r.delete("dst")
    assert cf.loadchunk("dst", *chunks[0]) == b"OK"
    # A restore under way starts anew from a first chunk.
    assert cf.loadchunk("dst", *chunks[0]) == b"OK"
    with pytest.raises(redis.ResponseError, match="being restored"):
        cf.exists("dst", "x1")
    with pytest.raises(redis.ResponseError, match="invalid chunk"):
        cf.loadchunk("dst", *chunks[2])  # skips chunk 1
    for it, data in chunks[1:]:
        cf.loadchunk("dst", it, data)
    assert cf.exists("dst", "x1") == 1
    assert cf.exists("dst", "old") == 0


def test_loadchunk_keeps_an_expiry_set_while_restoring(r):
    # The last chunk stored a new value for the key, which dropped a TTL set after the first.
    cf = r.cf()
    cf.insert("src", [f"x{i}" for i in range(3000)])
    chunks = scandump(r, "src")
    assert len(chunks) > 2
    for it, data in chunks[:-1]:
        assert cf.loadchunk("dst", it, data) == b"OK"
    assert r.expire("dst", 100) and r.ttl("dst") == 100
    assert cf.loadchunk("dst", *chunks[-1]) == b"OK"
    assert 0 < r.ttl("dst") <= 100
    assert dump_bytes(r, "dst") == dump_bytes(r, "src")
    assert cf.exists("dst", "x1") == 1 and r.memory_usage("dst") < 2 * r.memory_usage("src")


def test_loadchunk_rejects_garbage(r):
    cf = r.cf()
    import random
    rng = random.Random(7)
    for n in (1, 50, 200, 5000):
        data = bytes(rng.getrandbits(8) for _ in range(n))
        with pytest.raises(redis.ResponseError):
            cf.loadchunk("bad", n + 1, data)
    assert r.exists("bad") == 0
    cf.insert("src", [f"x{i}" for i in range(100)])
    whole = dump_bytes(r, "src")
    with pytest.raises(redis.ResponseError):
        cf.loadchunk("bad", 0, b"")
    # A complete dump with one byte of the table changed fails the checksum.
    broken = bytearray(whole)
    broken[len(broken) // 2] ^= 0x40
    with pytest.raises(redis.ResponseError, match="invalid"):
        cf.loadchunk("bad", len(broken) + 1, bytes(broken))
    # A header claiming a huge table (of buckets enough for its word count), with nothing after
    # it, waits for bytes it never gets.
    huge = bytearray(whole[:120])
    huge[40 + 24:40 + 32] = (1 << 38).to_bytes(8, "little")
    huge[40 + 56:40 + 64] = (1 << 40).to_bytes(8, "little")
    assert cf.loadchunk("bad", len(huge) + 1, bytes(huge)) == b"OK"
    assert r.memory_usage("bad") < 1 << 20
    with pytest.raises(redis.ResponseError, match="being restored"):
        cf.info("bad")
    assert r.ping()


def test_a_refused_first_chunk_changes_nothing(r):
    # A whole dump in one bad chunk is refused as RESTORE refuses bad data: a missing key stays
    # missing, a restore under way goes on (only a bad dump found at a later chunk deletes the
    # key); a key holding a filter refuses every first chunk.
    cf = r.cf()
    cf.insert("src", [f"x{i}" for i in range(3000)])
    chunks = scandump(r, "src")
    whole = dump_bytes(r, "src")
    broken = bytearray(whole)
    broken[200] ^= 1
    cf.insert("kept", ["a", "b"])
    kept = dump_bytes(r, "kept")
    for data in (bytes(broken), whole[:100]):  # a checksum mismatch; headers cut short
        with pytest.raises(redis.ResponseError, match="invalid"):
            cf.loadchunk("missing", len(data) + 1, data)
        assert r.exists("missing") == 0
        with pytest.raises(redis.ResponseError, match="item exists"):
            cf.loadchunk("kept", len(data) + 1, data)
        assert dump_bytes(r, "kept") == kept and cf.exists("kept", "a") == 1
    assert cf.loadchunk("pending", *chunks[0]) == b"OK"
    with pytest.raises(redis.ResponseError, match="invalid"):
        cf.loadchunk("pending", len(broken) + 1, bytes(broken))
    with pytest.raises(redis.ResponseError, match="being restored"):
        cf.exists("pending", "x1")
    for it, data in chunks[1:]:  # the restore under way goes on
        assert cf.loadchunk("pending", it, data) == b"OK"
    assert dump_bytes(r, "pending") == whole


def test_a_first_chunk_with_headers_a_dump_never_has_changes_nothing(r):
    # The first chunk of a longer dump was checked for its magic, versions and size alone: one
    # whose other header fields the last chunk refuses replaced the key's filter, and the key
    # was gone once the last chunk came.
    cf = r.cf()
    cf.insert("grow", [f"x{i}" for i in range(3000)])
    cf.create("static", 3000, expansion=0, max_iterations=77)
    cf.insert("static", [f"x{i}" for i in range(2000)])

    def first_chunk(key, fields):
        it, data = scandump(r, key)[0]
        assert it < len(dump_bytes(r, key))  # a dump of several chunks
        data = bytearray(data)
        for offset, value, width in fields:
            data[offset:offset + width] = value.to_bytes(width, "little")
        return it, bytes(data)

    f = 40  # the filter file follows the module's 40-byte header
    assert (cf.info("static").bucketSize, dump_bytes(r, "static")[f + 12]) == (8, 12)
    forged = [("grow", [(12, 1, 4)], "bad module header"),  # bytes 12 to 15 are zero
              ("grow", [(16, 10**6, 8)], "bad module header"),  # expansion past 32768
              ("grow", [(24, 0, 8)], "bad module header"),  # max iterations 0
              ("static", [(24, 78, 8)], "bad module header"),  # not the file's max kicks
              ("static", [(f + 8, 9, 4)], "unsupported filter file version 9"),
              ("static", [(f + 16, 3, 4)], "corrupt filter file"),  # 3 slots a bucket
              ("grow", [(f + 24, 0, 8)], "corrupt filter file"),  # no buckets
              # 24-bit fingerprints in buckets of 4: the words of 12 x 8, a layout not built
              ("static", [(f + 12, 24, 4), (f + 16, 4, 4)], "which ccf does not build")]
    assert cf.loadchunk("pending", *scandump(r, "grow")[0]) == b"OK"  # a restore under way
    for key, fields, message in forged:
        it, data = first_chunk(key, fields)
        with pytest.raises(redis.ResponseError, match=message):
            cf.loadchunk("missing", it, data)
        assert r.exists("missing") == 0, (key, fields)
        with pytest.raises(redis.ResponseError, match=message):
            cf.loadchunk("pending", it, data)
        assert r.exists("pending") == 1, (key, fields)
    # The same chunks unchanged start a restore that completes.
    for key in ("grow", "static"):
        for it, data in scandump(r, key):
            assert cf.loadchunk("copy", it, data) == b"OK"
        assert dump_bytes(r, "copy") == dump_bytes(r, key)
        r.delete("copy")


def test_loadchunk_refuses_a_module_header_reserve_never_writes(r):
    # The module's header is outside the filter's checksum: CF.INFO showed "Max iterations -1"
    # and a negative count of deleted items from a forged one.
    cf = r.cf()
    cf.create("static", 1000, expansion=0, max_iterations=77)
    cf.create("grow", 1000)
    cf.insert("static", ["a", "b"])
    cf.insert("grow", ["a", "b"])

    def with_field(key, offset, value):
        dump = bytearray(dump_bytes(r, key))
        dump[offset:offset + 8] = value.to_bytes(8, "little")
        return bytes(dump)

    expansion, iterations, deleted = 16, 24, 32
    for key, offset, value in [("static", iterations, 2**64 - 1), ("static", iterations, 78),
                               ("grow", iterations, 0), ("grow", iterations, 65536),
                               ("grow", expansion, 32769), ("grow", deleted, 2**63),
                               ("static", deleted, 2**64 - 1)]:
        forged = with_field(key, offset, value)
        with pytest.raises(redis.ResponseError, match="bad module header"):
            cf.loadchunk("bad", len(forged) + 1, forged)
        assert r.exists("bad") == 0, (key, offset, value)
    # What CF.RESERVE takes loads.
    for key, offset, value in [("grow", iterations, 65535), ("grow", expansion, 32768),
                               ("static", deleted, 2**63 - 1)]:
        dump = with_field(key, offset, value)
        assert cf.loadchunk("good", len(dump) + 1, dump) == b"OK"
        assert cf.exists("good", "a") == 1
        r.delete("good")
    # CF.DEL at the largest count keeps it there: one more made a dump (and so a RDB file, an
    # AOF rewrite, DUMP) that no load takes.
    dump = with_field("static", deleted, 2**63 - 1)
    assert cf.loadchunk("most", len(dump) + 1, dump) == b"OK"
    assert cf.delete("most", "a") == 1
    assert cf.info("most").deletedNum == 2**63 - 1
    assert r.restore("most-copy", 0, r.dump("most")) == b"OK"
    assert cf.info("most-copy").deletedNum == 2**63 - 1
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert cf.info("most").deletedNum == 2**63 - 1
    assert cf.exists("most", "b") == 1


def with_checksum(ccf_file: bytearray) -> bytes:
    """A ccf filter file with its XXH3-64 checksum (the last 8 bytes) computed anew."""
    import ctypes
    import ctypes.util
    xxh = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    xxh.XXH3_64bits.restype = ctypes.c_uint64
    xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    body = bytes(ccf_file[:-8])
    return body + xxh.XXH3_64bits(body, len(body)).to_bytes(8, "little")


def test_loadchunk_refuses_a_bare_file_whose_max_kicks_reserve_never_takes(r):
    # A static filter's max iterations are its file's max kicks: a bare file with 0 (no insert
    # could move an item) or 65536 loaded. Dumps with the module's header keep theirs (databases
    # saved before the check must load).
    cf = r.cf()
    cf.create("static", 1000, expansion=0, max_iterations=77)
    cf.insert("static", ["a", "b"])
    dump = bytearray(dump_bytes(r, "static"))
    assert with_checksum(dump[40:]) == bytes(dump[40:])  # the checksum is computed as the loader's

    def forged(kicks, header=True):
        d = bytearray(dump)
        d[24:32] = kicks.to_bytes(8, "little")  # the module header's max iterations
        d[80:88] = kicks.to_bytes(8, "little")  # the file's max kicks (offset 40 of the file)
        return (bytes(d[:40]) if header else b"") + with_checksum(d[40:])

    for kicks in (0, 65536):
        data = forged(kicks, header=False)
        with pytest.raises(redis.ResponseError, match="where CF.RESERVE takes MAXITERATIONS 1 to"):
            cf.loadchunk("bad", len(data) + 1, data)
        assert r.exists("bad") == 0, kicks
        data = forged(kicks, header=True)
        assert cf.loadchunk("saved", len(data) + 1, data) == b"OK"
        assert cf.info("saved").maxIteration == kicks and cf.exists("saved", "a") == 1
        r.delete("saved")
    for kicks in (1, 65535):
        for header in (True, False):
            data = forged(kicks, header)
            assert cf.loadchunk("good", len(data) + 1, data) == b"OK"
            assert cf.info("good").maxIteration == kicks and cf.exists("good", "a") == 1
            r.delete("good")
    # The module header's bytes 12 to 15 are zero.
    data = bytearray(dump)
    data[12:16] = b"\xef\xbe\xad\xde"
    with pytest.raises(redis.ResponseError, match="bad module header"):
        cf.loadchunk("bad", len(data) + 1, bytes(data))
    assert r.exists("bad") == 0


def test_redis_cli(server, r):
    assert server.cli("CF.RESERVE", "c", 100).strip() == "OK"
    assert server.cli("CF.ADD", "c", "hello").strip() == "1"
    assert server.cli("CF.EXISTS", "c", "hello").strip() == "1"
    assert server.cli("CF.MEXISTS", "c", "hello", "bye").split() == ["1", "0"]
    assert server.cli("CF.COUNT", "c", "hello").strip() == "1"
    assert server.cli("CF.DEL", "c", "hello").strip() == "1"
    assert server.cli("CF.INSERTNX", "c", "ITEMS", "a", "a").split() == ["1", "0"]
    info = server.cli("CF.INFO", "c").splitlines()
    assert info[0] == "Size" and info[14] == "Max iterations"
    assert "not found" in server.cli("CF.INFO", "missing")
    server.cli("SET", "str", "v")
    assert "WRONGTYPE" in server.cli("CF.ADD", "str", "x")


def test_loadchunk_takes_a_bare_ccf_file(r):
    cf = r.cf()
    cf.create("src", 1000, expansion=0, max_iterations=77)
    cf.insert("src", [f"x{i}" for i in range(500)])
    bare = dump_bytes(r, "src")[40:]  # without the module's header: a ccf filter file
    assert bare[:8] == b"CCFILTER"
    assert cf.loadchunk("dst", len(bare) + 1, bare) == b"OK"
    assert all(cf.mexists("dst", *[f"x{i}" for i in range(500)]))
    info = cf.info("dst")
    assert (info.expansionRate, info.maxIteration, info.deletedNum) == (0, 77, 0)


def test_copies_of_one_item_fill_its_two_buckets(r):
    cf = r.cf()
    cf.create("g", 1000)  # growing: 2 buckets x 4 slots hold 8 copies
    assert [cf.add("g", "same") for _ in range(8)] == [1] * 8
    assert "Filter is full" in error_of(cf.add, "g", "same")
    assert cf.count("g", "same") == 8
    assert cf.add("g", "other") == 1


def resp_command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_info_is_a_map_under_resp3(server, r):
    import socket
    r.cf().create("f", 100)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(resp_command("HELLO", 3) + resp_command("CF.INFO", "f") +
                  resp_command("CF.EXISTS", "f", "a") + resp_command("PING"))
        data = b""
        for _ in range(100):
            if data.endswith(b"+PONG\r\n"):
                break
            data += s.recv(65536)
    info = data[data.index(b"%8\r\n"):]
    assert b"+Size\r\n:" in info and b"+Max iterations\r\n:500\r\n" in info
    assert b":0\r\n+PONG\r\n" in info  # CF.EXISTS: an integer, as RedisBloom replies


def test_binary_items(r):
    cf = r.cf()
    items = [b"\x00", b"\x00\xff", b"a\r\nb", bytes(range(256)), b""]
    assert cf.insert("bin", items) == [1] * len(items)
    assert cf.mexists("bin", *items) == [1] * len(items)
    assert cf.exists("bin", b"\x00\xfe") == 0
    assert cf.delete("bin", b"") == 1 and cf.exists("bin", b"") == 0


def test_module_cannot_load_twice_or_unload(r):
    from redis_harness import MODULE
    with pytest.raises(redis.ResponseError):
        r.execute_command("MODULE", "LOAD", MODULE)
    with pytest.raises(redis.ResponseError):
        r.execute_command("MODULE", "UNLOAD", "ccf")  # it exports a data type
    assert r.ping()


def test_a_filter_larger_than_maxmemory_leaves_is_refused():
    # deny-oom refuses a command only once used memory is past maxmemory: one CF.RESERVE
    # allocated its whole table beyond it (evicting every other key, or ending the server).
    with Server("--maxmemory", "32mb") as s:
        r = s.client()
        for create in (lambda: r.execute_command("CF.RESERVE", "big", 50_000_000),
                       lambda: r.cf().insert("big", ["x"], capacity=50_000_000),
                       lambda: r.execute_command("CF.RESERVE", "big", 50_000_000,
                                                 "EXPANSION", 1)):
            with pytest.raises(redis.ResponseError, match="past maxmemory"):
                create()
            assert r.exists("big") == 0
        assert r.info("memory")["used_memory"] < 32 << 20
        assert r.execute_command("CF.RESERVE", "small", 10_000)
        assert r.cf().add("small", "a") == 1 and r.cf().add("made", "a") == 1
    with Server() as s:  # no maxmemory: no limit from the module either
        assert s.client().execute_command("CF.RESERVE", "big", 5_000_000)


def test_maxmemory_check_counts_the_whole_table():
    # The check took capacity x fingerprint bits / 8 bytes: a growing filter's table is up to
    # twice that (whole chunks, a power of two of them), and CF.INSERT ... CAPACITY 10000000 took
    # used memory from 1 MB to 35 MB past a maxmemory of 20 MB.
    shapes = [("CF.INSERT", "CAPACITY", 10_000_000, "ITEMS", "a"),
              ("CF.RESERVE", 10_000_000),
              ("CF.RESERVE", 4_000_000, "ERROR", 0.0001),
              ("CF.RESERVE", 25_000_000, "EXPANSION", 0),
              ("CF.RESERVE", 12_000_000, "EXPANSION", 0, "BUCKETSIZE", 2, "ERROR", 0.001),
              ("CF.RESERVE", 7_000_000, "EXPANSION", 0, "BUCKETSIZE", 8, "ERROR", 1e-6)]
    sizes, grown = [], []
    with Server() as s:  # the tables themselves, made without maxmemory
        r = s.client()
        for i, (command, *args) in enumerate(shapes):
            before = r.info("memory")["used_memory"]
            r.execute_command(command, f"k{i}", *args)
            grown.append(r.info("memory")["used_memory"] - before)
            sizes.append(r.cf().info(f"k{i}").size)
            r.delete(f"k{i}")
        # The allocator's block is larger than the table (its size class): between the two, the
        # check counted the table alone and let used memory pass maxmemory.
        before = r.info("memory")["used_memory"]
        r.config_set("maxmemory", before + (sizes[1] + grown[1]) // 2)
        with pytest.raises(redis.ResponseError, match="past maxmemory"):
            r.execute_command(*shapes[1][:1], "tight", *shapes[1][1:])
        assert r.dbsize() == 0
    assert all(size > 20 << 20 for size in sizes)
    with Server("--maxmemory", "20mb") as s:
        r = s.client()
        for i, (command, *args) in enumerate(shapes):
            with pytest.raises(redis.ResponseError, match="past maxmemory") as e:
                r.execute_command(command, f"k{i}", *args)
            counted = int(str(e.value).split("a filter of ")[1].split()[0])
            # What the check counts is what creating it grew used_memory by (which other
            # allocations and frees of the server move by a few kilobytes).
            assert sizes[i] < counted and abs(counted - grown[i]) < grown[i] / 50, (
                shapes[i], sizes[i], counted, grown[i])
        assert r.dbsize() == 0 and r.info("memory")["used_memory"] < 20 << 20


def test_maxmemory_check_leaves_out_what_redis_leaves_out():
    # Redis compares with maxmemory its used memory less the replication and AOF buffers
    # (INFO's mem_not_counted_for_evict); the module counted them too, so a replica that reads
    # slowly made CF.RESERVE refuse a filter that a SET of the same size was let through with.
    with Server("--repl-diskless-sync", "no", "--repl-backlog-size", "1mb",
                "--client-output-buffer-limit", "replica 0 0 0") as s:
        r = s.client()
        replica = socket.create_connection((HOST, s.port), timeout=30)
        try:
            replica.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            replica.sendall(b"SYNC\r\n")  # then never reads: the master buffers its stream
            assert wait_until(lambda: r.info("replication")["connected_slaves"] == 1)
            # Written until the master holds 16 MiB for the replica (how much the sockets take
            # first depends on the host), at most 400 MiB.
            value = b"x" * (1 << 20)
            for i in range(400):
                r.set(f"v{i}", value)
                r.delete(f"v{i}")
                if r.info("memory")["mem_not_counted_for_evict"] > 16 << 20:
                    break
            memory = r.info("memory")
            buffers = memory["mem_not_counted_for_evict"]
            assert buffers > 16 << 20
            r.execute_command("CF.RESERVE", "probe", 1_000_000, "EXPANSION", 0)
            size = r.memory_usage("probe")
            r.delete("probe")
            memory = r.info("memory")
            counted = memory["used_memory"] - memory["mem_not_counted_for_evict"]
            r.config_set("maxmemory", counted + size + buffers // 2)
            assert r.set("string", b"y" * size)
            r.delete("string")
            assert r.execute_command("CF.RESERVE", "f", 1_000_000, "EXPANSION", 0) == b"OK"
        finally:
            replica.close()


def test_a_cache_that_evicts_makes_room_for_a_filter():
    # Under a policy that evicts, Redis keeps used memory just under maxmemory and evicts keys to
    # make room for each write: the module refused every new filter that did not fit in the last
    # few bytes left, so a full cache took none, where a SET of the same size went through.
    with Server("--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru") as s:
        r = s.client()
        for i in range(2000):
            r.set(f"s{i}", b"x" * 10_000)
        assert r.info("stats")["evicted_keys"] > 0
        assert r.execute_command("CF.RESERVE", "f", 1_000_000, "EXPANSION", 0) == b"OK"
        assert r.cf().add("made", "a") == 1
        assert r.cf().insert("inserted", ["a"], capacity=100_000) == [1]
        assert r.set("string", b"y" * 10_000)
        assert r.info("memory")["used_memory"] < 8 << 20  # Redis evicted to make room
        # A table that does not fit even with every key evicted is refused all the same.
        with pytest.raises(redis.ResponseError, match="past maxmemory"):
            r.execute_command("CF.RESERVE", "big", 50_000_000)
        assert r.exists("big") == 0


def test_a_cache_that_evicts_only_keys_with_a_ttl_makes_no_room():
    # volatile-* policies evict only keys with a time to live: with none, nothing makes room for
    # a filter, which is refused as under noeviction (it was let through past maxmemory).
    with Server("--maxmemory", "8mb", "--maxmemory-policy", "volatile-lru") as s:
        r = s.client()
        filled = 0
        for i in range(2000):
            try:
                r.set(f"s{i}", b"x" * 10_000)
            except redis.ResponseError as e:  # "OOM command not allowed ..."
                assert str(e).startswith("OOM")
                break
            filled += 1
        assert 0 < filled < 2000
        r.delete(*(f"s{i}" for i in range(5)))  # under maxmemory again: deny-oom lets writes in
        used = r.info("memory")["used_memory"]
        with pytest.raises(redis.ResponseError, match="past maxmemory"):
            r.execute_command("CF.RESERVE", "f", 1_000_000, "EXPANSION", 0)
        assert r.exists("f") == 0
        assert r.info("memory")["used_memory"] <= used + (256 << 10)


def test_memory_usage_is_what_del_frees():
    # A growing filter's kept hashes were counted as 32-byte blocks each; Redis's allocator gives
    # a 16-byte node 16 bytes (MEMORY USAGE said 430,984 bytes where DEL freed 291,240).
    def usage_and_freed(r, key):
        usage = r.memory_usage(key)
        before = r.info("memory")["used_memory"]
        r.delete(key)
        return usage, before - r.info("memory")["used_memory"]

    with Server() as s:
        r = s.client()
        r.cf().insert("warm-up", ["x"])
        usage_and_freed(r, "warm-up")  # the first DEL also frees memory of the server's own
        items = [f"item{i}" for i in range(10_000)]
        r.execute_command("CF.RESERVE", "growing", 100)
        for i in range(0, len(items), 2500):
            r.cf().insert("growing", items[i:i + 2500])
        r.execute_command("CF.RESERVE", "static", 100_000, "EXPANSION", 0)
        r.cf().insert("static", items[:2500])
        # Large tables: the allocator's size class adds up to a quarter to the table's bytes.
        r.execute_command("CF.RESERVE", "big-growing", 5_000_000)
        r.execute_command("CF.RESERVE", "big-static", 5_000_000, "EXPANSION", 0)
        assert r.cf().info("growing").size < 40_000  # most of it is the kept hashes
        for key in ("growing", "static", "big-growing", "big-static"):
            usage, freed = usage_and_freed(r, key)
            assert abs(usage - freed) < freed / 10, (key, usage, freed)
