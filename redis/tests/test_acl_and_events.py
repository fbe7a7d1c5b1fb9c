"""What each CF.* command declares about its key (ACL read / write selectors, COMMAND INFO,
COMMAND GETKEYS) and the keyspace events of the writes that change a filter."""
import time

import pytest
import redis

from redis_harness import Server, dump_bytes, scandump

READS = ["CF.EXISTS", "CF.MEXISTS", "CF.COUNT", "CF.SCANDUMP"]
WRITES = ["CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX", "CF.DEL",
          "CF.LOADCHUNK"]


@pytest.fixture(scope="module")
def server():
    with Server(module_args=["CHUNK_SIZE", "256"]) as s:
        yield s


@pytest.fixture
def r(server):
    client = server.client()
    client.flushall()
    client.config_set("notify-keyspace-events", "")
    for user in ("reader", "writer"):
        client.acl_deluser(user)
    return client


def calls(r, key):
    """One call of each command on `key` (which must not exist), in an order in which each
    succeeds when run with full access; LOADCHUNK restores a dump made beforehand."""
    r.cf().insert("dump:src", ["a", "b"])
    it, data = scandump(r, "dump:src")[0]
    r.delete("dump:src")
    return {
        "CF.RESERVE": [key, 100],
        "CF.ADD": [key, "a"],
        "CF.ADDNX": [key, "b"],
        "CF.INSERT": [key, "ITEMS", "c"],
        "CF.INSERTNX": [key, "ITEMS", "d"],
        "CF.EXISTS": [key, "a"],
        "CF.MEXISTS": [key, "a", "b"],
        "CF.COUNT": [key, "a"],
        "CF.INFO": [key],
        "CF.SCANDUMP": [key, 0],
        "CF.DEL": [key, "a"],
        "CF.LOADCHUNK": [key, it, data],
    }


def run_as(server, user, command, args):
    """The command's reply as `user`, or "NOPERM" when ACL refused it."""
    client = server.client(username=user, password="pw")
    try:
        return client.execute_command(command, *args)
    except redis.exceptions.NoPermissionError:
        return "NOPERM"
    except redis.ResponseError as e:
        if str(e).startswith("NOPERM") or "no permissions" in str(e):
            return "NOPERM"
        raise
    finally:
        client.close()


def test_read_and_write_key_selectors(server, r):
    # %R~ admits the commands that read the filter's items, %W~ those that change it; CF.INFO
    # reveals only sizes (as STRLEN does) and needs either. Without key specs every command
    # needed both, so each selector refused everything.
    r.execute_command("ACL", "SETUSER", "reader", "on", ">pw", "+@all", "%R~cf:*")
    r.execute_command("ACL", "SETUSER", "writer", "on", ">pw", "+@all", "%W~cf:*")
    args = calls(r, "cf:k")
    for command in ["CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX"]:
        assert run_as(server, "reader", command, args[command]) == "NOPERM", command
        assert run_as(server, "writer", command, args[command]) != "NOPERM", command
    for command in READS:
        assert run_as(server, "writer", command, args[command]) == "NOPERM", command
        assert run_as(server, "reader", command, args[command]) != "NOPERM", command
    assert r.cf().exists("cf:k", "c") == 1  # the writer's CF.INSERT went in
    assert run_as(server, "reader", "CF.INFO", args["CF.INFO"]) != "NOPERM"
    assert run_as(server, "writer", "CF.INFO", args["CF.INFO"]) != "NOPERM"
    for command in ["CF.DEL", "CF.LOADCHUNK"]:
        assert run_as(server, "reader", command, args[command]) == "NOPERM", command
        if command == "CF.LOADCHUNK":
            r.delete("cf:k")  # a key holding a filter refuses it ("item exists")
        assert run_as(server, "writer", command, args[command]) != "NOPERM", command
    # Keys outside the pattern stay refused to both.
    other = calls(r, "other:k")
    for command in READS + WRITES + ["CF.INFO"]:
        for user in ("reader", "writer"):
            assert run_as(server, user, command, other[command]) == "NOPERM", (user, command)


def key_spec_flags(server, command):
    """The flags of the command's one key spec, from redis-cli's raw COMMAND INFO."""
    lines = server.cli("COMMAND", "INFO", command).splitlines()
    start = lines.index("flags", lines.index(command.upper()) + 1)
    end = lines.index("begin_search", start)
    return set(lines[start + 1:end])


def test_command_info_declares_the_key(server, r):
    expected = {
        "CF.RESERVE": {"RW", "insert"}, "CF.ADD": {"RW", "insert"},
        "CF.ADDNX": {"RW", "insert"}, "CF.INSERT": {"RW", "insert"},
        "CF.INSERTNX": {"RW", "insert"}, "CF.DEL": {"RW", "delete"},
        "CF.LOADCHUNK": {"OW", "update"}, "CF.INFO": {"RO"},
        **{c: {"RO", "access"} for c in READS},
    }
    args = calls(r, "k")
    for command, flags in expected.items():
        assert key_spec_flags(server, command) == flags, command
        assert r.execute_command("COMMAND GETKEYS", command, *args[command]) == ["k"], command
    docs = server.cli("COMMAND", "DOCS", "CF.ADD")
    assert "Adds an item, creating the filter if it does not exist" in docs


def events_until(pubsub, sentinel, limit=200, timeout=10.0):
    """(event, key) pairs received until the event on `sentinel`, which is not included."""
    seen = []
    deadline = time.monotonic() + timeout
    for _ in range(limit):
        if time.monotonic() > deadline:
            break
        m = pubsub.get_message(timeout=0.5)
        if m is None or m["type"] != "pmessage":
            continue
        pair = (m["channel"].decode().split(":", 1)[1], m["data"].decode())
        if pair[1] == sentinel:
            return seen
        seen.append(pair)
    raise AssertionError(f"no event on {sentinel} after {seen}")


def test_writes_that_change_a_filter_send_events(r):
    r.config_set("notify-keyspace-events", "Egd")
    pubsub = r.pubsub()
    pubsub.psubscribe("__keyevent@0__:*")
    assert pubsub.get_message(timeout=5)["type"] == "psubscribe"
    cf = r.cf()
    cf.create("f", 100)
    cf.add("f", "a")
    assert cf.addnx("f", "a") == 0  # unchanged: no event
    cf.addnx("f", "b")
    cf.insert("f", ["c", "d"])
    assert cf.insertnx("f", ["c"]) == [0]  # unchanged
    cf.insert("made", ["x"])
    with pytest.raises(redis.ResponseError):
        cf.insert("absent", ["x"], nocreate=True)
    assert cf.delete("f", "zzz") == 0  # unchanged
    cf.delete("f", "a")
    cf.exists("f", "b")
    cf.mexists("f", "b", "c")
    r.execute_command("CF.RESERVE", "full", 4, "EXPANSION", 0, "BUCKETSIZE", 2)
    added = 0
    for _ in range(64):  # copies of one item fill its two buckets, then CF.ADD fails
        try:
            cf.add("full", "same")
            added += 1
        except redis.ResponseError:
            break
    assert 0 < added < 64
    chunks = scandump(r, "f")
    for it, data in chunks:
        cf.loadchunk("copy", it, data)
    whole = bytearray(dump_bytes(r, "f"))
    whole[len(whole) // 2] ^= 0x40
    with pytest.raises(redis.ResponseError):
        cf.loadchunk("broken", len(whole) + 1, bytes(whole))  # one bad chunk: the key goes
    cf.create("sentinel", 10)
    assert events_until(pubsub, "sentinel") == [
        ("cf.reserve", "f"), ("cf.add", "f"), ("cf.add", "f"), ("cf.insert", "f"),
        ("cf.insert", "made"), ("cf.del", "f"), ("cf.reserve", "full"),
        *[("cf.add", "full")] * added,
        *[("cf.loadchunk", "copy")] * len(chunks),
    ]
    pubsub.close()


def test_bad_last_chunk_sends_del(r):
    r.config_set("notify-keyspace-events", "Egd")
    cf = r.cf()
    cf.insert("f", [f"x{i}" for i in range(300)])
    chunks = scandump(r, "f")
    assert len(chunks) > 1
    pubsub = r.pubsub()
    pubsub.psubscribe("__keyevent@0__:*")
    assert pubsub.get_message(timeout=5)["type"] == "psubscribe"
    for it, data in chunks[:-1]:
        cf.loadchunk("copy", it, data)
    # An empty chunk where the next one goes changes nothing: no event, nothing to replicate
    # (it sent cf.loadchunk and went to replicas and the AOF).
    changes = r.info("persistence")["rdb_changes_since_last_save"]
    assert cf.loadchunk("copy", chunks[-2][0], b"")
    assert r.info("persistence")["rdb_changes_since_last_save"] == changes
    it, data = chunks[-1]
    with pytest.raises(redis.ResponseError):
        cf.loadchunk("copy", it, bytes(len(data)))  # zeros: the checksum fails
    assert r.exists("copy") == 0
    cf.create("sentinel", 10)
    assert events_until(pubsub, "sentinel") == [
        *[("cf.loadchunk", "copy")] * (len(chunks) - 1), ("del", "copy")]
    pubsub.close()


def test_no_events_unless_enabled(r):
    pubsub = r.pubsub()
    pubsub.psubscribe("__keyevent@0__:*")
    assert pubsub.get_message(timeout=5)["type"] == "psubscribe"
    r.cf().add("f", "a")
    r.config_set("notify-keyspace-events", "Eg")  # generic only: no module-type events
    r.cf().add("f", "b")
    r.set("sentinel", 1)
    r.delete("sentinel")
    assert events_until(pubsub, "sentinel", limit=20) == []  # the first event is DEL's
    pubsub.close()
