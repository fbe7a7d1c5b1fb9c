#!/usr/bin/env python3
"""ccf's cuckoo filter in Redis against a native set: throughput and memory per item.

Starts one redis-server with the module on 127.0.0.1 (a free port, a temporary directory), then
  * redis-benchmark, pipelined (-P 64), N requests of random members out of 10 N (-r 10N, so that
    no member is added often enough to fill its two buckets): CF.ADD / CF.EXISTS / CF.MEXISTS
    (10 items) against SADD / SISMEMBER / SMISMEMBER (10 items);
  * N distinct items in a filter reserved for N at a 0.1 % false-positive rate (static, and the
    growing default) and in a set: MEMORY USAGE and the used_memory delta, per item;
  * CF.SCANDUMP of a static and a growing filter reserved for D items at 0.1 %
    (--dump-capacity, default 10^8: a 180 MB and a 302 MB dump) in the default 16 MiB chunks:
    the server's time (SLOWLOG) of the slowest and the median call before the last chunk, of the
    last chunk's call (it ends with the checksum of the whole dump) and of the call that ends the
    scan, and the client's time of the whole dump; against GETRANGE of 16 MiB of a string of the
    static dump's size (Redis's own time to reply with as many bytes);
and prints the figures and the ratios. Environment: CCF_REDIS_MODULE (the built ccf_redis.so),
CCF_REDIS_SERVER, CCF_REDIS_BENCHMARK.

  redis/bench.py --items 1000000
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))
from redis_harness import HOST, Server  # noqa: E402

BENCHMARK = os.environ.get("CCF_REDIS_BENCHMARK", "redis-benchmark")
BATCH = 1000


def rps(server, n, clients, *command):
    """Requests per second of one redis-benchmark run."""
    cmd = [BENCHMARK, "-h", HOST, "-p", str(server.port), "-P", "64", "-c", str(clients), "-n",
           str(n), "-r", str(10 * n), "--csv", *command]
    run = subprocess.run(cmd, capture_output=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}):\n"
                           f"{run.stdout.decode()[-2000:]}\n{run.stderr.decode()[-2000:]}")
    rows = [row for row in csv.reader(io.StringIO(run.stdout.decode())) if row and row[0] != "test"]
    return float(rows[-1][1])


def throughput(server, n, clients):
    item = "item:__rand_int__"
    many = [item] * 10
    pairs = [
        ("add", ["CF.ADD", "cf", item], ["SADD", "set", item]),
        ("exists", ["CF.EXISTS", "cf", item], ["SISMEMBER", "set", item]),
        ("mexists(10)", ["CF.MEXISTS", "cf", *many], ["SMISMEMBER", "set", *many]),
    ]
    rows = []
    for name, cf_cmd, set_cmd in pairs:
        rows.append((name, rps(server, n, clients, *cf_cmd), rps(server, n, clients, *set_cmd)))
    return rows


def used_memory(r):
    return r.info("memory")["used_memory"]


def memory(server, n):
    r = server.client()
    r.flushall()
    rows = []
    cases = [
        ("cf static 0.1%", ["CF.RESERVE", "m", n, "ERROR", 0.001, "EXPANSION", 0],
         ["CF.INSERT"], ["ITEMS"]),
        ("cf growing 0.1%", ["CF.RESERVE", "m", n, "ERROR", 0.001], ["CF.INSERT"], ["ITEMS"]),
        ("set", None, ["SADD"], []),
    ]
    for name, reserve, add, marker in cases:
        r.flushall()
        before = used_memory(r)
        if reserve:
            r.execute_command(*reserve)
        for i in range(0, n, BATCH):
            items = [f"item:{j}" for j in range(i, min(n, i + BATCH))]
            r.execute_command(*add, "m", *marker, *items)
        usage = r.memory_usage("m", samples=0)
        rows.append((name, usage / n, (used_memory(r) - before) / n))
    return rows


def scandump(server, capacity):
    """Rows (filter, dump bytes, calls, and in s the server's time of the slowest and the median
    call before the last chunk's, of the last chunk's call, of the call that ends the scan, and
    the client's of the whole dump) of CF.SCANDUMP of a static and a growing filter; and
    getrange()'s time."""
    r = server.client()
    rows = []
    for name, expansion in (("static", 0), ("growing", 1)):
        r.flushall()
        r.execute_command("CF.RESERVE", "d", capacity, "ERROR", 0.001, "EXPANSION", expansion)
        r.config_set("slowlog-log-slower-than", 0)  # the server's time of every call
        r.config_set("slowlog-max-len", 4096)
        r.slowlog_reset()
        calls, size, start, it = 0, 0, time.perf_counter(), 0
        for _ in range(4000):
            it, data = r.cf().scandump("d", it)
            calls += 1
            if it == 0:
                break
            size += len(data)
        whole = time.perf_counter() - start
        r.config_set("slowlog-log-slower-than", 10000)
        log = r.slowlog_get(4096)
        # Newest first: the call that ended the scan, the last chunk's, then the others.
        times = [e["duration"] / 1e6 for e in log
                 if e["command"].upper().startswith(b"CF.SCANDUMP")]
        assert len(times) == calls, (len(times), calls)
        last = times[1] if calls > 1 else 0.0
        chunks = sorted(times[2:])
        median = chunks[len(chunks) // 2] if chunks else 0.0
        rows.append((name, size, calls, max(chunks, default=0.0), median, last, times[0], whole))
    return rows, getrange(r, rows[0][1])


def getrange(r, size):
    """The server's median time of a GETRANGE of 16 MiB out of a string of `size` bytes: what
    Redis takes to reply with as many bytes of its own."""
    r.flushall()
    r.setrange("s", size - 1, b"x")
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    chunk = 16 << 20
    for offset in range(0, size - chunk, chunk):
        r.getrange("s", offset, offset + chunk - 1)
    r.config_set("slowlog-log-slower-than", 10000)
    times = sorted(e["duration"] / 1e6 for e in r.slowlog_get(4096)
                   if e["command"].upper().startswith(b"GETRANGE"))
    r.flushall()
    return times[len(times) // 2] if times else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--dump-capacity", type=int, default=100_000_000)
    parser.add_argument("--smoke", action="store_true", help="check that it runs (tiny sizes)")
    args = parser.parse_args()
    with Server() as server:
        t = throughput(server, args.items, args.clients)
        m = memory(server, args.items)
        d = scandump(server, args.items if args.smoke else args.dump_capacity)
    print(f"ccf Redis module vs native set: {args.items} items, redis-benchmark -P 64 "
          f"-c {args.clients}")
    print(f"{'command':<14}{'CF ops/s':>14}{'set ops/s':>14}{'CF/set':>9}")
    for name, cf_rps, set_rps in t:
        print(f"{name:<14}{cf_rps:>14,.0f}{set_rps:>14,.0f}{cf_rps / set_rps:>9.2f}")
    print(f"{'structure':<18}{'MEMORY USAGE B/item':>21}{'used_memory B/item':>20}")
    for name, usage, delta in m:
        print(f"{name:<18}{usage:>21.2f}{delta:>20.2f}")
    set_usage = m[-1][1]
    for name, usage, _ in m[:-1]:
        print(f"set / {name}: {set_usage / usage:.1f}x the memory")
    print("CF.SCANDUMP, 16 MiB chunks: the server's time of a call (SLOWLOG), and the client's of "
          "the whole dump")
    print(f"{'filter':<9}{'dump bytes':>14}{'calls':>7}{'slowest chunk s':>17}{'median s':>10}"
          f"{'last chunk s':>14}{'end s':>9}{'whole s':>9}")
    dumps, floor = d
    for name, size, calls, slowest, median, last, end, whole in dumps:
        print(f"{name:<9}{size:>14,}{calls:>7}{slowest:>17.4f}{median:>10.4f}{last:>14.4f}"
              f"{end:>9.4f}{whole:>9.2f}")
    if floor > 0:
        print(f"GETRANGE of 16 MiB of a {dumps[0][1]:,}-byte string: median {floor:.4f} s; "
              "median chunk / that: "
              + ", ".join(f"{row[0]} {row[4] / floor:.2f}" for row in dumps))
    ok = (all(a > 0 and b > 0 for _, a, b in t) and all(u > 0 for _, u, _ in m)
          and all(row[1] > 0 for row in d[0]))
    if args.smoke and not ok:
        print("smoke run: a figure is missing", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
