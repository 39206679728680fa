"""The benchmark harness behind tools/bench/run (docs/performance.md).

One process, one thread: cases set systems up, run fio (or another
workload) against them in interleaved rounds, and hand records to the
report. Everything a case creates is registered with the Session, which
undoes it in reverse order on any exit, including Ctrl-C.
"""
