"""Reads smaller than a block: a program reading a file 512 bytes at a
time (read(2) in a loop, no O_DIRECT), in order and at random offsets.

In fuse.cache=direct every read(2) reaches the daemon; fuse.read_blocks
keeps the block a small read came from, so the next small reads of that
block are answered from memory (docs/design.md section 2.3). The rows:
peregrine as mounted by default, the same with fuse.read_blocks=0 (every
read goes to the members: what it costs without the feature), with
fuse.cache=writeback (the kernel's page cache answers), the peers, and I:
the same loop on one member file through the machine's page cache."""
from ..fio import Workload
from . import common, report_util
from .base import Case, run_matrix


def workloads(ctx):
    return [Workload(rw, bs="512", qd=1, direct=False) for rw in ("read", "randread")]


def configs(ctx, media):
    ts = ctx.args.transports
    t = ts[-1]
    out = [common.one_member(media)]
    out += [common.peregrine(media, x) for x in ts]
    out.append(common.peregrine(media, t, options=("fuse.read_blocks=0",), name=f"peregrine-{t}-no-read-blocks"))
    out.append(common.peregrine(media, t, options=("fuse.cache=writeback",), name=f"peregrine-{t}-writeback"))
    out += common.peers(ctx, media)
    return out


def run(ctx):
    for media in ctx.media:
        run_matrix(ctx, f"smallread-{media.name}", configs(ctx, media), workloads(ctx))


def report(ctx):
    def render(c, media):
        names = [w.name for w in workloads(ctx)]
        text = report_util.fio_table(c, workloads(ctx), ctx, "reads/s of 512 bytes, one process, median over rounds")
        t = ctx.args.transports[-1]
        base = f"peregrine-{t}-no-read-blocks"
        rows = [[f"peregrine-{t} / {base}"] + [report_util.fmt(report_util.ratio(
            report_util.value(c, f"peregrine-{t}", w), report_util.value(c, base, w)), 2) for w in names]]
        return text + "\nratios (reads/s):\n\n" + report_util.md_table(["ratio"] + names, rows)
    return report_util.media_report(ctx, "smallread", render)


def steps(ctx):
    return ctx.rounds() * sum(len(configs(ctx, m)) for m in ctx.media)


CASE = Case("smallread", "reads of 512 bytes", run, report, steps=steps)
