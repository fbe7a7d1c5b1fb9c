"""A replica (--replicaof) ends with the filters of its master: by full sync and by the command
stream."""
import contextlib

import pytest
import redis

from redis_harness import (DEFAULTED_KEYS, DEFAULTS_A, DEFAULTS_B, HOST, Server, canonical,
                           dump_bytes, filters, make_filters_with_defaults, wait_until)


def in_sync(master, replica):
    offset = master.info("replication")["master_repl_offset"]
    info = replica.info("replication")
    return info.get("master_link_status") == "up" and info.get("slave_repl_offset", -1) >= offset


def test_replica_matches_master():
    with Server() as m:
        master = m.client()
        cf = master.cf()
        # Before the replica: reaches it by the full sync (RDB).
        cf.create("static", 50_000, expansion=0)
        cf.create("big", 200_000)  # growing, past the size where it keeps hashes
        cf.insert("static", [f"a{i}" for i in range(20_000)])
        for i in range(0, 150_000, 5000):
            cf.insert("big", [f"b{j}" for j in range(i, i + 5000)])
        with Server("--replicaof", HOST, str(m.port)) as rs:
            replica = rs.client()
            assert wait_until(lambda: in_sync(master, replica), timeout=30)
            # After: reaches it by the command stream.
            cf.insert("static", [f"c{i}" for i in range(10_000)])
            cf.delete("static", "a5")
            cf.insertnx("small", [f"d{i}" for i in range(3000)])  # created, then doubles
            cf.insert("big", [f"e{i}" for i in range(60_000)])  # doubles past 2 chunks
            cf.add("fresh", "x")
            r = dump_bytes(master, "static")[:300]
            master.execute_command("CF.LOADCHUNK", "copied", len(r) + 1, r)
            # A restore whose last chunk is bad: the key goes, on the replica too.
            whole = bytearray(dump_bytes(master, "static"))
            whole[len(whole) // 2] ^= 1
            master.execute_command("CF.LOADCHUNK", "broken", 301, bytes(whole[:300]))
            with pytest.raises(redis.ResponseError, match="invalid dump"):
                master.execute_command("CF.LOADCHUNK", "broken", len(whole) + 1,
                                       bytes(whole[300:]))
            master.execute_command("WAIT", 1, 10_000)
            assert wait_until(lambda: in_sync(master, replica), timeout=30)
            assert sorted(replica.keys()) == sorted(master.keys())
            assert replica.exists("broken") == 0 and replica.exists("copied") == 1
            for key in ("static", "big", "small", "fresh"):
                a, b = dump_bytes(master, key), dump_bytes(replica, key)
                assert canonical(a) == canonical(b), key
            # Static filters and filters past the kept-hash stage are byte for byte the same.
            assert dump_bytes(master, "static") == dump_bytes(replica, "static")
            assert dump_bytes(master, "big") == dump_bytes(replica, "big")
            assert replica.cf().info("static").deletedNum == 1
            assert replica.cf().exists("small", "d2999") == 1


def synced_then_rebuilt(m, rs):
    """A small growing filter reaches the replica by full sync, then doubles on both sides."""
    master, replica = m.client(), rs.client()
    assert wait_until(lambda: in_sync(master, replica), timeout=30)
    for i in range(0, 30_000, 3000):
        master.cf().insert("g", [f"b{j}" for j in range(i, i + 3000)])
    master.execute_command("WAIT", 1, 10_000)
    assert wait_until(lambda: in_sync(master, replica), timeout=30)
    return master, replica


def test_replica_of_small_growing_filter_has_no_false_negatives():
    with Server() as m:
        m.client().cf().create("g", 100)
        m.client().cf().insert("g", [f"a{i}" for i in range(1000)])
        with Server("--replicaof", HOST, str(m.port)) as rs:
            master, replica = synced_then_rebuilt(m, rs)
            items = [f"a{i}" for i in range(1000)] + [f"b{i}" for i in range(30_000)]
            for i in range(0, len(items), 5000):
                assert all(replica.cf().mexists("g", *items[i:i + 5000]))
            assert replica.cf().info("g").insertedNum == master.cf().info("g").insertedNum


def test_replica_of_small_growing_filter_is_identical():
    with Server() as m:
        m.client().cf().create("g", 100)
        m.client().cf().insert("g", [f"a{i}" for i in range(1000)])
        with Server("--replicaof", HOST, str(m.port)) as rs:
            master, replica = synced_then_rebuilt(m, rs)
            assert canonical(dump_bytes(master, "g")) == canonical(dump_bytes(replica, "g"))


def fill_until_full(cf, key):
    """CF.ADD distinct items to a small static filter until it answers "full"; returns the
    number of errors seen (a few, and then more for CF.ADDNX)."""
    errors = 0
    for i in range(200):
        try:
            cf.add(key, f"f{i}")
        except redis.ResponseError as e:
            assert "full" in str(e).lower()
            errors += 1
    for i in range(200, 210):
        with pytest.raises(redis.ResponseError, match="(?i)full"):
            cf.addnx(key, f"f{i}")
        errors += 1
    return errors


def caught_up(master, replica):
    master.execute_command("WAIT", 1, 10_000)
    assert wait_until(lambda: in_sync(master, replica), timeout=30)


@contextlib.contextmanager
def replica_that_panics_on_errors():
    """A master and a replica that panics on an error reply to a replicated command (master,
    replica); at the end, checks that the replica is alive, caught up, and replied no error."""
    with Server() as m:
        master = m.client()
        with Server("--replicaof", HOST, str(m.port),
                    "--propagation-error-behavior", "panic") as rs:
            replica = rs.client()
            assert wait_until(lambda: in_sync(master, replica), timeout=30)
            yield master, replica
            master.execute_command("WAIT", 1, 10_000)
            assert rs.proc.poll() is None, rs.log()
            caught_up(master, replica)
            assert "errorstat_ERR" not in replica.info("errorstats"), rs.log()


def test_failed_writes_do_not_reach_the_replica():
    # CF.ADD was replicated before it ran: a replica replayed every "filter full" and reported
    # the error to its master, or panicked with propagation-error-behavior panic. A CF.LOADCHUNK
    # whose last chunk was bad reached it as that failing chunk too; it now gets a DEL.
    with replica_that_panics_on_errors() as (master, replica):
        master.execute_command("CF.RESERVE", "tiny", 8, "EXPANSION", 0, "BUCKETSIZE", 2)
        assert fill_until_full(master.cf(), "tiny") > 10
        master.cf().insert("source", [f"s{i}" for i in range(100)])
        dump = bytearray(dump_bytes(master, "source"))
        dump[len(dump) // 2] ^= 1
        master.execute_command("CF.LOADCHUNK", "broken", 301, bytes(dump[:300]))
        with pytest.raises(redis.ResponseError, match="invalid dump"):
            master.execute_command("CF.LOADCHUNK", "broken", len(dump) + 1, bytes(dump[300:]))
        caught_up(master, replica)
        assert replica.exists("broken") == 0
        assert dump_bytes(master, "tiny") == dump_bytes(replica, "tiny")


def crowd_until_doubled_and_refused(master, key):
    """Fills the growing filter `key` to 95 %, then adds eight copies of one new item after
    another until an insert doubles the table and is refused all the same; returns how many
    did (0 if none within 8000 items)."""
    info = master.cf().info(key)
    room = int(0.949 * info.bucketNum * 4) - info.insertedNum
    pipe = master.pipeline(transaction=False)
    for i in range(room):
        pipe.execute_command("CF.ADD", key, f"p{i}")
    pipe.execute()
    assert master.cf().info(key).bucketNum == info.bucketNum  # 95 %, not doubled yet
    events, k = 0, 0
    while events == 0 and k < 8000:
        pipe = master.pipeline(transaction=False)
        for item in range(k, k + 250):
            for _ in range(8):
                pipe.execute_command("CF.ADD", key, f"k{item}")
                pipe.execute_command("CF.INFO", key)
        replies = pipe.execute(raise_on_error=False)
        before = None
        for add, info in zip(replies[0::2], replies[1::2]):  # CF.INFO parsed
            if isinstance(add, redis.ResponseError) and before and info.bucketNum > before:
                events += 1
            before = info.bucketNum
        k += 250
    return events


def test_a_growing_filter_that_doubles_and_refuses_reaches_the_replica_without_an_error():
    # Replicated verbatim, such an insert doubled the replica's filter, was refused there too,
    # and the replica panicked. It now gets the CF.INSERT that does the same.
    with replica_that_panics_on_errors() as (master, replica):
        master.execute_command("CF.RESERVE", "g", 1000, "ERROR", 0.04)
        assert crowd_until_doubled_and_refused(master, "g") > 0
        caught_up(master, replica)
        assert dump_bytes(master, "g") == dump_bytes(replica, "g")


def test_a_replica_with_less_maxmemory_takes_what_its_master_made():
    # The check against maxmemory is the master's: a replica applies the master's commands
    # whatever its own memory (as Redis does), or it would differ from its master.
    with Server() as m:
        master = m.client()
        with Server("--replicaof", HOST, str(m.port), "--maxmemory", "16mb",
                    "--propagation-error-behavior", "panic") as rs:
            replica = rs.client()
            assert wait_until(lambda: in_sync(master, replica), timeout=30)
            master.execute_command("CF.RESERVE", "big", 20_000_000)
            master.cf().add("big", "item")
            caught_up(master, replica)
            assert rs.proc.poll() is None, rs.log()
            assert replica.cf().exists("big", "item") == 1
            assert replica.cf().info("big").size == master.cf().info("big").size


def test_a_replica_with_other_defaults_makes_the_masters_filters():
    # Commands that made a filter from the module's defaults were replicated verbatim: the replica
    # made it from its own DEFAULT_CAPACITY and DEFAULT_ERROR, another table, which then answered
    # differently. They now reach it as the CF.RESERVE that makes the master's filter.
    with Server(module_args=DEFAULTS_A) as m:
        master = m.client()
        with Server("--replicaof", HOST, str(m.port), "--propagation-error-behavior", "panic",
                    module_args=DEFAULTS_B) as rs:
            replica = rs.client()
            assert wait_until(lambda: in_sync(master, replica), timeout=30)
            make_filters_with_defaults(master)
            caught_up(master, replica)
            assert rs.proc.poll() is None, rs.log()
            assert sorted(replica.keys()) == sorted(k.encode() for k in DEFAULTED_KEYS)
            expected = filters(master)
            assert filters(replica) == expected
            assert expected["add"][0]["bucketNum"] > expected["insert"][0]["bucketNum"]  # doubled
            for key in ("static", "bucket", "rate"):
                assert dump_bytes(master, key) == dump_bytes(replica, key), key
            assert "errorstat_ERR" not in replica.info("errorstats"), rs.log()
