"""What a case is, and the interleaved-rounds loop every fio case shares.

A case lists configurations (systems set up one way) and workloads. One
round sets each configuration up once and runs every workload on it; the
report takes the median over rounds. Interleaving puts a slow or fast
spell of a shared machine on every configuration instead of on one.
"""
import os
import statistics
from dataclasses import dataclass, field

from .. import fio
from ..peers import Peers


class Skip(Exception):
    """A configuration this machine cannot set up; the report says why."""


@dataclass
class Config:
    name: str               # row label, stable across rounds
    setup: object           # setup(ctx) -> (Target, teardown)
    note: str = ""          # shown under the table (e.g. which mergerfs setting)


@dataclass
class Case:
    name: str
    title: str
    run: object              # run(ctx) -> None, appends records through ctx.record
    report: object           # report(ctx) -> markdown text
    plots: object = None     # plots(ctx, outdir) -> [png paths]
    steps: object = None     # steps(ctx) -> progress steps it will take (for time left)
    in_default: bool = True  # run when no --only is given


@dataclass
class Context:
    session: object
    bins: object
    args: object
    out_dir: str
    records: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)     # case -> [text]
    extras: dict = field(default_factory=dict)    # case -> free-form JSON-able data
    media: list = field(default_factory=list)     # media.Media the fio cases run on
    tmpfs_media: object = None
    disk_media: object = None
    shaped_media: object = None
    have_mergerfs: bool = False
    peers: Peers = field(default_factory=Peers)  # mergerfs / passthrough_hp builds given by path
    fuse_uring: bool = False    # the fuse module's enable_uring is on for this run

    @property
    def quick(self):
        return self.args.quick

    def seconds(self, full=None):
        return self.args.seconds if self.args.seconds else (1 if self.quick else (full or 5))

    def rounds(self):
        return self.args.rounds if self.args.rounds else (1 if self.quick else 3)

    def note(self, case, text):
        self.notes.setdefault(case, []).append(text)

    def record(self, case, config, workload, round_, values):
        rec = {"case": case, "config": config, "workload": workload, "round": round_, **values}
        self.records.append(rec)
        if "error" in values:
            self.session.progress.note(f"{config} {workload}: {values['error']}")
            # One note per cell, however many rounds failed (paths differ).
            if not any(n.startswith(f"{config} {workload}: ") for n in self.notes.get(case, [])):
                self.note(case, f"{config} {workload}: fio failed: {values['error']}")
        return rec


def run_rounds(ctx, case, configs, body, what="", rounds=None):
    """The interleaved loop: every configuration set up once per round and
    `body(cfg, target, round)` run on it; a Skip in setup leaves that
    configuration out (said in the report)."""
    rounds = rounds or ctx.rounds()
    ctx.session.progress.plan(rounds * len(configs))
    skipped = set()
    for cfg in configs:
        # What each row is (a peer's version and settings): said once under the table.
        if cfg.note and cfg.note not in ctx.notes.get(case, []):
            ctx.note(case, cfg.note)
    for r in range(1, rounds + 1):
        for cfg in configs:
            ctx.session.progress.step(f"{case}: round {r}/{rounds}, {cfg.name}{what}")
            if cfg.name in skipped:
                continue
            try:
                target, teardown = cfg.setup(ctx)
            except Skip as why:
                skipped.add(cfg.name)
                ctx.note(case, f"{cfg.name} not measured: {why}")
                continue
            try:
                body(cfg, target, r)
            finally:
                teardown()


def run_matrix(ctx, case, configs, workloads, label="", rounds=None):
    """run_rounds with every workload run by fio on each configuration."""
    secs = ctx.seconds()

    def body(cfg, target, r):
        for w in workloads:
            raw = os.path.join(ctx.out_dir, "raw", case, cfg.name, f"{w.name}-r{r}.json")
            ctx.record(case, cfg.name, w.name, r, fio.run(target, w, secs, raw))
        if target.pids:
            ctx.record(case, cfg.name, "daemon", r, {"peak_rss_kib": fio.peak_rss_kib(target.pids)})
    run_rounds(ctx, case, configs, body, f"{label} ({len(workloads)} workloads x {secs} s)", rounds)


def cells(records, case):
    """{config: {workload: {metric: median over rounds}}} for one case."""
    grouped = {}
    for rec in records:
        if rec["case"] != case:
            continue
        cell = grouped.setdefault(rec["config"], {}).setdefault(rec["workload"], {})
        if "error" in rec:
            # A failed run's zeros are no measurement: the cell shows "-"
            # (with the error in the notes) rather than a median with 0 in it.
            cell.setdefault("errors", []).append(rec["error"])
            continue
        for k, v in rec.items():
            if isinstance(v, (int, float)) and k != "round":
                cell.setdefault(k, []).append(v)
    out = {}
    for config, works in grouped.items():
        for wname, metrics in works.items():
            m = {}
            for k, vals in metrics.items():
                if k == "errors":
                    m["errors"] = vals
                else:
                    m[k] = statistics.median(vals)
                    m[k + "_rounds"] = vals
            _split_of_median_cpu(m)
            out.setdefault(config, {})[wname] = m
    return out


def _split_of_median_cpu(m):
    """User and system CPU per IO of the round(s) whose total is the
    median, so that the two shown add up to the total shown beside them
    (medians taken apart need not)."""
    rounds = list(zip(m.get("cpu_us_per_io_rounds", []), m.get("user_us_per_io_rounds", []),
                      m.get("sys_us_per_io_rounds", [])))
    if not rounds or len(rounds) != len(m["cpu_us_per_io_rounds"]):
        return
    rounds.sort()
    mid = len(rounds) // 2
    middle = rounds[mid:mid + 1] if len(rounds) % 2 else rounds[mid - 1:mid + 1]
    m["user_us_per_io"] = statistics.mean(r[1] for r in middle)
    m["sys_us_per_io"] = statistics.mean(r[2] for r in middle)


def value(cells_, config, workload, metric="iops"):
    return cells_.get(config, {}).get(workload, {}).get(metric)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, float) and digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def limit(c, i):
    """L = 1/(1/C + 1/I): FUSE and member IO sharing the same CPUs."""
    if not c or not i:
        return None
    return 1 / (1 / c + 1 / i)
