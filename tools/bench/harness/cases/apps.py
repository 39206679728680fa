"""Ordinary programs on the machine's disk, as a new user tries a volume:
unpack a source tree (tar x, then an fsync of the tree's top so the members
hold it), walk it (find, du, ls -lR), read every file (tar c) once and then
twice, grep -r, git (clone of this repository, status, log -p), an sqlite database (commits in WAL mode with
synchronous=FULL, then a bulk insert and full scans), cp of a large file
and rm -rf. peregrine at its default (fuse.cache=writeback) and with
fuse.cache=direct, mergerfs and an ext4 (native) directory on the same
disk; seconds per step, the page cache dropped before each step (the
benchmark writes /proc/sys/vm/drop_caches: a quiet machine is assumed).

The tree is /usr/include (about 300 MB in 22K files once install-deps
has run) as a tarball made once per run, or --apps-tree TARBALL."""
import os
import sqlite3
import subprocess
import time

from .. import systems
from . import common
from .base import Case, Config, cells, fmt, md_table, ratio, run_rounds, value

STEPS = ("unpack", "walk", "read", "read_twice", "grep", "git", "sqlite_commits", "sqlite_bulk", "cp", "rm")
# The repository the benchmark runs from, cloned by the git step.
_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
_SOURCES = ("/usr/include",)


def _drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def _tree(ctx):
    given = getattr(ctx.args, "apps_tree", None)
    if given:
        return given
    out = os.path.join(ctx.out_dir, "apps-tree.tar")
    if not os.path.exists(out):
        sources = [s for s in _SOURCES if os.path.isdir(s)]
        subprocess.run(["tar", "cf", out, "--ignore-failed-read"] + sources, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def _timed(fn):
    _drop_caches()
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def _sh(*argv, cwd=None):
    subprocess.run(list(argv), check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sqlite_commits(path, n):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    for i in range(n):
        db.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * 100))
    db.close()


def _sqlite_bulk(path, rows):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE b (k INTEGER PRIMARY KEY, v TEXT)")
    db.executemany("INSERT INTO b VALUES (?, ?)", ((i, "y" * 100) for i in range(rows)))
    db.commit()
    for _ in range(5):
        db.execute("SELECT sum(length(v)) FROM b").fetchone()
    db.close()


# mergerfs at its defaults but for the placement over four branches (its
# cache.files=off, which the fio cases use, makes SQLite's WAL mmap fail).
MERGERFS_APPS = "category.create=mfs"


def configs(ctx):
    transport = ctx.args.transports[-1]
    out = common.directories(ctx, ctx.disk_media, transport, volume_member_mib=4096)

    def merger(c):
        t, td = systems.mergerfs(c.session, c.disk_media.dir, 4, MERGERFS_APPS, 1,
                                 binary=common.mergerfs_binary(c))
        return os.path.dirname(t.files[0]), td
    out = [Config("mergerfs", merger, note="mergerfs: -o " + MERGERFS_APPS) if x.name == "mergerfs-default" else x
           for x in out]

    def direct(c):
        v = systems.Volume(c.session, c.bins, c.disk_media.dir, 4, transport=transport, fill_file=False,
                           member_mib=4096, options=("fuse.cache=direct",), label="peregrine-direct")
        return v.mnt, v.teardown
    # peregrine at fuse.cache=direct beside its default, for the difference.
    return out[:1] + [Config("peregrine-direct", direct, note="peregrine-direct: -o fuse.cache=direct")] + out[1:]


def run(ctx):
    tree = _tree(ctx)
    commits = 200 if ctx.quick else 2000
    rows = 30000 if ctx.quick else 300000
    big_mib = 128 if ctx.quick else 1024
    src_big = os.path.join(ctx.out_dir, "apps-big.bin")
    if not os.path.exists(src_big):
        _sh("dd", "if=/dev/urandom", f"of={src_big}", "bs=1M", f"count={big_mib}")

    def body(cfg, where, r):
        d = os.path.join(where, "apps")
        os.mkdir(d)
        t = {}
        t["unpack"] = _timed(lambda: (_sh("tar", "xf", tree, "-C", d), _fsync_path(d)))
        t["walk"] = _timed(lambda: (_sh("find", d), _sh("du", "-s", d), _sh("ls", "-lR", d)))
        # Through a pipe: GNU tar writing to /dev/null itself reads no file.
        t["read"] = _timed(lambda: _sh("sh", "-c", "tar cf - . | cat >/dev/null", cwd=d))
        t["read_twice"] = _timed(lambda: (_sh("sh", "-c", "tar cf - . | cat >/dev/null", cwd=d),
                                          _sh("sh", "-c", "tar cf - . | cat >/dev/null", cwd=d)))
        t["grep"] = _timed(lambda: subprocess.run(["grep", "-r", "-c", "peregrine-no-such-word", d],
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        # git: clone this repository (no hardlinks: a real copy), then status
        # and the whole history with its patches.
        t["git"] = _timed(lambda: (_sh("git", "clone", "-q", "--no-hardlinks", _REPO, os.path.join(d, "repo")),
                                   _sh("git", "-C", os.path.join(d, "repo"), "status"),
                                   _sh("sh", "-c", "git -C repo log -p | cat >/dev/null", cwd=d)))
        t["sqlite_commits"] = _timed(lambda: _sqlite_commits(os.path.join(d, "c.db"), commits))
        t["sqlite_bulk"] = _timed(lambda: _sqlite_bulk(os.path.join(d, "b.db"), rows))
        t["cp"] = _timed(lambda: (_sh("cp", src_big, os.path.join(d, "big")), _fsync_path(os.path.join(d, "big"))))
        t["rm"] = _timed(lambda: _sh("rm", "-rf", d))
        for step, secs in t.items():
            ctx.record("apps", cfg.name, step, r, {"seconds": secs})
    run_rounds(ctx, "apps", configs(ctx), body, " (ordinary programs)")


def report(ctx):
    c = cells(ctx.records, "apps")
    if not c:
        return ""
    rows = [[cfg] + [fmt(value(c, cfg, s, "seconds"), 2) for s in STEPS] for cfg in c]
    native = next((n for n in c if n.startswith("native")), None)
    if native and "peregrine" in c:
        rows.append(["peregrine / ext4"] + [fmt(ratio(value(c, "peregrine", s, "seconds"),
                                                      value(c, native, s, "seconds")), 2) for s in STEPS])
    return ("Ordinary programs on the machine's disk, seconds (lower is better), page cache dropped "
            "before each step; medians of the rounds.\n\n" + md_table(["system"] + list(STEPS), rows))


def steps(ctx):
    return ctx.rounds() * len(configs(ctx))


CASE = Case("apps", "ordinary programs: tar, find, grep, sqlite, cp, rm", run, report, steps=steps)
