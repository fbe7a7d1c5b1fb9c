"""Starts and stops redis-server processes with the ccf module, on 127.0.0.1 only.

Each server runs in its own temporary directory, on a free port, and is stopped by its PID
(SIGTERM, a bounded wait, then SIGKILL). Every wait here is bounded in count and time.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis

MODULE = os.path.abspath(os.environ["CCF_REDIS_MODULE"]) if os.environ.get("CCF_REDIS_MODULE") else ""
SERVER = os.environ.get("CCF_REDIS_SERVER", "redis-server")
CLI = os.environ.get("CCF_REDIS_CLI", "redis-cli")
HOST = "127.0.0.1"


def free_port(bus=False):
    """A port that nothing listens on now (the kernel's choice for port 0); with `bus`, one
    whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if not bus:
            return port
        if port + 10000 > 65535:
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((HOST, port + 10000))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def wait_until(predicate, timeout=20.0, step=0.05):
    """Polls `predicate` until it is true; False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / step) + 1):
        if predicate():
            return True
        if time.monotonic() > deadline:
            break
        time.sleep(step)
    return bool(predicate())


class Server:
    """One redis-server with the module loaded."""

    def __init__(self, *args, module_args=(), directory=None, save=False, cluster=False):
        if not MODULE or not os.path.exists(MODULE):
            raise RuntimeError("CCF_REDIS_MODULE does not name the built module")
        self.own_dir = directory is None
        self.dir = directory or tempfile.mkdtemp(prefix="ccf-redis-")
        self.args = list(args)
        self.module_args = list(module_args)
        self.save = save
        self.cluster = cluster
        self.proc = None
        self.port = None
        try:
            self.start()
        except RuntimeError:
            self.close()
            raise

    def start(self):
        for _ in range(5):  # another process may take the free port before the server binds it
            self.port = free_port(bus=self.cluster)
            if self._try_start():
                return
        raise RuntimeError("redis-server did not start:\n" + self.log())

    def _try_start(self):
        cmd = [SERVER, "--port", str(self.port), "--bind", HOST, "--dir", self.dir,
               "--enable-debug-command", "yes", "--daemonize", "no", "--logfile", "server.log",
               "--loadmodule", MODULE, *self.module_args]
        if not self.save:
            cmd += ["--save", ""]
        if self.cluster:
            cmd += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "5000"]
        cmd += self.args
        self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        if wait_until(lambda: self.proc.poll() is not None or self._pings(), timeout=15):
            if self.proc.poll() is None and self._pings():
                return True
        self.stop()
        return False

    def _pings(self):
        try:
            return redis.Redis(host=HOST, port=self.port, socket_timeout=1).ping()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            return False

    def client(self, **kwargs):
        return redis.Redis(host=HOST, port=self.port, socket_timeout=60, **kwargs)

    def cli(self, *args, stdin=None):
        """redis-cli's output for one command (raw mode: one reply element a line)."""
        out = subprocess.run([CLI, "-h", HOST, "-p", str(self.port), *map(str, args)],
                             input=stdin, capture_output=True, timeout=30, check=True)
        return out.stdout.decode(errors="replace")

    def log(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def restart(self):
        self.stop()
        self.start()

    def close(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def scandump(r, key):
    """All (iterator, chunk) pairs of CF.SCANDUMP key."""
    chunks = []
    it = 0
    for _ in range(1_000_000):
        it, data = r.cf().scandump(key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))
    raise AssertionError("CF.SCANDUMP did not end")


def dump_bytes(r, key):
    return b"".join(data for _, data in scandump(r, key))


def canonical(dump):
    """A dump with a growing filter's kept hashes sorted and the checksum dropped.

    ccf's growing filter keeps the hashes of its items while it is one small chunk and saves them
    in the order of an unordered multiset, which differs between a filter and its reloaded copy
    (the set is the same); everything else in the dump is identical.
    """
    import struct
    base = 40 if dump[:8] == b"CCFREDIS" else 0
    alternate, = struct.unpack_from("<I", dump, base + 20)
    words, = struct.unpack_from("<Q", dump, base + 56)
    payload = base + 80
    if alternate != 3:
        return dump[:-8]
    kept, count = struct.unpack_from("<QQ", dump, payload + 24)
    end = payload + 8 * words
    if not kept or count == 0:
        return dump[:-8]
    start = end - 8 * count
    hashes = sorted(struct.unpack_from(f"<{count}Q", dump, start))
    return dump[:start] + struct.pack(f"<{count}Q", *hashes) + dump[end:-8]


# Module arguments of two servers whose defaults differ (the master's, and its replica's or the
# server's that loads its AOF later): the filters a command stream makes must not depend on them.
DEFAULTS_A = ["DEFAULT_CAPACITY", "700", "DEFAULT_ERROR", "0.003"]
DEFAULTS_B = ["DEFAULT_CAPACITY", "20000", "DEFAULT_ERROR", "0.02"]
DEFAULTED_KEYS = ("add", "addnx", "insert", "capacity", "insertnx", "reserve", "static",
                  "bucket", "rate", "multi", "lua", "lua2")


def make_filters_with_defaults(r):
    """Makes the filters DEFAULTED_KEYS with commands that take the module's defaults: CF.ADD,
    CF.ADDNX, CF.INSERT and CF.INSERTNX of missing keys, CF.RESERVE without ERROR, also in a
    transaction and in a script; then adds enough to "add" to double it at DEFAULTS_A's capacity."""
    r.execute_command("CF.ADD", "add", "x")
    r.execute_command("CF.ADDNX", "addnx", "x")
    r.execute_command("CF.INSERT", "insert", "ITEMS", "x", "y")
    r.execute_command("CF.INSERT", "capacity", "CAPACITY", 5000, "ITEMS", "x")
    r.execute_command("CF.INSERTNX", "insertnx", "ITEMS", "x", "x", "z")
    r.execute_command("CF.RESERVE", "reserve", 3000)
    r.execute_command("CF.RESERVE", "static", 3000, "EXPANSION", 0)
    r.execute_command("CF.RESERVE", "bucket", 3000, "EXPANSION", 0, "BUCKETSIZE", 2,
                      "MAXITERATIONS", 20)
    r.execute_command("CF.RESERVE", "rate", 3000, "ERROR", "0.00001234")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("CF.ADD", "multi", "x")
    pipe.execute_command("CF.INSERT", "multi", "ITEMS", "y")
    pipe.execute()
    r.eval("redis.call('CF.ADD', KEYS[1], 'x') "
           "return redis.call('CF.INSERTNX', KEYS[2], 'ITEMS', 'x')", 2, "lua", "lua2")
    r.execute_command("CF.INSERT", "add", "ITEMS", *[f"i{n}" for n in range(3000)])
    for key in ("static", "bucket", "rate"):
        r.execute_command("CF.INSERT", key, "ITEMS", *[f"i{n}" for n in range(1000)])


def filters(r, keys=DEFAULTED_KEYS):
    """Each key's CF.INFO fields and dump (canonical), to compare two servers' filters."""
    return {k: (vars(r.cf().info(k)), canonical(dump_bytes(r, k))) for k in keys}
