"""A three-master Redis Cluster on loopback: filters spread over the shards, one slot migrated
(CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE), and the filters readable after."""
import subprocess
from contextlib import ExitStack

import redis
from redis.cluster import RedisCluster

from redis_harness import CLI, HOST, Server, canonical, dump_bytes, wait_until


def cluster_ok(node):
    try:
        return node.cluster("info")["cluster_state"] == "ok"
    except redis.RedisError:
        return False


def owns(node, key):
    try:
        return node.exists(key) == 1
    except redis.ResponseError:  # MOVED: another node's slot
        return False


def node_id(node):
    return node.execute_command("CLUSTER", "MYID").decode()


def test_cluster_spread_and_slot_migration():
    with ExitStack() as stack:
        servers = [stack.enter_context(Server(cluster=True)) for _ in range(3)]
        subprocess.run([CLI, "--cluster", "create", *[f"{HOST}:{s.port}" for s in servers],
                        "--cluster-yes"], capture_output=True, timeout=60, check=True)
        nodes = [s.client() for s in servers]
        assert all(wait_until(lambda n=n: cluster_ok(n), timeout=30) for n in nodes)

        rc = RedisCluster(host=HOST, port=servers[0].port, socket_timeout=30)
        keys = [f"filter:{i}" for i in range(30)]
        for k in keys:
            assert rc.execute_command("CF.RESERVE", k, 1000) == b"OK"
            assert rc.execute_command("CF.INSERT", k, "ITEMS", *[f"{k}:{j}" for j in range(500)])
        assert all(n.dbsize() > 0 for n in nodes)  # every shard holds filters
        assert sum(n.dbsize() for n in nodes) == len(keys)

        # Move the slot of one filter to another master.
        key = keys[0]
        slot = nodes[0].execute_command("CLUSTER", "KEYSLOT", key)
        source = next(i for i, n in enumerate(nodes) if owns(n, key))
        target = (source + 1) % 3
        src, dst = nodes[source], nodes[target]
        before = canonical(dump_bytes(src, key))
        src_id, dst_id = node_id(src), node_id(dst)
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        in_slot = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        assert key.encode() in in_slot
        assert src.execute_command("MIGRATE", HOST, servers[target].port, "", 0, 10_000,
                                   "KEYS", *in_slot) == b"OK"
        for n in nodes:
            n.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        assert src.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        assert owns(dst, key) and not owns(src, key)
        assert canonical(dump_bytes(dst, key)) == before

        rc = RedisCluster(host=HOST, port=servers[0].port, socket_timeout=30)
        for k in keys:
            found = rc.execute_command("CF.MEXISTS", k, *[f"{k}:{j}" for j in range(500)])
            assert all(found), k
        assert rc.execute_command("CF.ADD", key, "after-move") == 1
        assert dst.execute_command("CF.EXISTS", key, "after-move") == 1
