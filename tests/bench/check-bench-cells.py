#!/usr/bin/env python3
"""The bench's per-cell medians (tools/bench/harness/cases/base.py, cells()):
each metric is the median over rounds, and the user and system CPU per IO
shown beside the median total come from the median round(s), so the two
add up to it. Usage: check-bench-cells.py SOURCE_DIR"""
import math
import sys

sys.path.insert(0, f"{sys.argv[1]}/tools/bench")
from harness.cases.base import cells  # noqa: E402


def records(splits):
    return [{"case": "c", "config": "peregrine-io-uring", "workload": "w", "round": r,
             "iops": 1000.0 * (r + 1), "cpu_us_per_io": u + s, "user_us_per_io": u, "sys_us_per_io": s}
            for r, (u, s) in enumerate(splits)]


failures = []


def expect(what, got, want):
    if not math.isclose(got, want):
        failures.append(f"{what}: {got}, expected {want}")


# Odd rounds: totals 10, 3, 5; medians taken apart would give user 2 +
# system 2 = 4 against a median total of 5. The median round is (3, 2).
m = cells(records([(1, 9), (2, 1), (3, 2)]), "c")["peregrine-io-uring"]["w"]
expect("3 rounds: total", m["cpu_us_per_io"], 5)
expect("3 rounds: user", m["user_us_per_io"], 3)
expect("3 rounds: system", m["sys_us_per_io"], 2)
expect("3 rounds: iops", m["iops"], 2000)
# Even rounds: the median total is the mean of the middle two, and so are
# its parts.
m = cells(records([(1, 9), (2, 1), (3, 2), (4, 4)]), "c")["peregrine-io-uring"]["w"]
expect("4 rounds: total", m["cpu_us_per_io"], 6.5)
expect("4 rounds: user", m["user_us_per_io"], 3.5)
expect("4 rounds: system", m["sys_us_per_io"], 3)
# A failed round is no measurement: it leaves the medians alone.
recs = records([(1, 1), (2, 2), (3, 3)])
recs[2] = {"case": "c", "config": "peregrine-io-uring", "workload": "w", "round": 2, "error": "fio failed",
           "iops": 0.0, "cpu_us_per_io": 0.0, "user_us_per_io": 0.0, "sys_us_per_io": 0.0}
m = cells(recs, "c")["peregrine-io-uring"]["w"]
expect("a failed round: total", m["cpu_us_per_io"], 3)
expect("a failed round: user", m["user_us_per_io"], 1.5)
expect("a failed round: system", m["sys_us_per_io"], 1.5)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
