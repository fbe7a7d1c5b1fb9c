"""100,000 items: no false negative, and a false-positive rate near the target."""
import pytest

from redis_harness import Server

N = 100_000
PROBES = 200_000
BATCH = 2000


@pytest.fixture(scope="module")
def r():
    with Server() as s:
        yield s.client()


def fill(r, key, items):
    for i in range(0, len(items), BATCH):
        assert r.execute_command("CF.INSERT", key, "ITEMS", *items[i:i + BATCH]) == \
            [1] * len(items[i:i + BATCH])


def positives(r, key, items):
    found = 0
    for i in range(0, len(items), BATCH):
        found += sum(r.execute_command("CF.MEXISTS", key, *items[i:i + BATCH]))
    return found


@pytest.mark.parametrize("rate,options", [
    (0.01, ["EXPANSION", "0"]),
    (0.001, ["EXPANSION", "0"]),
    (0.01, []),  # growing from a small start: 100k items means many doublings
])
def test_no_false_negatives_and_rate(r, rate, options):
    key = f"f-{rate}-{len(options)}"
    capacity = N if options else 1000
    r.execute_command("CF.RESERVE", key, capacity, "ERROR", rate, *options)
    items = [f"member:{i}" for i in range(N)]
    fill(r, key, items)
    assert positives(r, key, items) == N
    absent = [f"absent:{i}" for i in range(PROBES)]
    fp = positives(r, key, absent) / PROBES
    assert fp <= rate * 1.3, fp
    assert fp >= rate / 50, fp  # the filter is not trivially exact either
    assert r.cf().info(key).insertedNum == N
