"""Configurations shared by the fio cases: the references and peregrine."""
import os
import subprocess

from .. import systems
from ..fio import Target
from ..media import shaped_dirs
from .base import Config, Skip

# mergerfs 2.33 (Debian 12), cache.files=off so it keeps no page cache of
# its own. "mergerfs-default": its default threads (threads=0: one per
# CPU), its best for CPU-bound work on tmpfs. "mergerfs-t32": 32 threads,
# its best where branches have latency: mergerfs serves one request per
# thread and waits for the branch, so its depth is its thread count. The
# ratios use the better of the two in each cell.
MERGERFS_SETTINGS = {
    "mergerfs-default": "cache.files=off,category.create=mfs",
    "mergerfs-t32": "cache.files=off,category.create=mfs,threads=32",
}

# A mergerfs build given with --peer-mergerfs (2.41): its documented best
# for throughput (mkdocs/docs/performance.md and config/ in its sources):
# no page cache of its own, pfrd placement, getattr from the newest branch,
# no cache dropping on close; the same two thread settings as above.
_PEER_BASE = "cache.files=off,category.create=pfrd,func.getattr=newest,dropcacheonclose=false"
PEER_MERGERFS_SETTINGS = {
    "mergerfs-default": _PEER_BASE,
    "mergerfs-t32": _PEER_BASE + ",threads=32",
}
# passthrough.io=rw (mergerfs 2.41+): the kernel does each read and write on
# the branch file itself, so per file this is kernel speed; it needs
# cache.files other than off (off means FOPEN_DIRECT_IO, which overrides
# passthrough; mergerfs's own passthrough benchmark uses auto-full). It
# cannot stripe: a file lives on one branch, so it gets one member's IOPS.
PEER_MERGERFS_PASSTHROUGH = ("cache.files=auto-full,passthrough.io=rw,category.create=pfrd,"
                             "func.getattr=newest,dropcacheonclose=false")


def mergerfs_settings(ctx):
    """{row name: -o string} of the mergerfs rows this run measures."""
    if ctx.peers.mergerfs:
        return PEER_MERGERFS_SETTINGS
    return MERGERFS_SETTINGS


def mergerfs_binary(ctx):
    return ctx.peers.mergerfs or "mergerfs"


def member_mib(ctx):
    return 320 if ctx.quick else 1280


def file_mib(ctx):
    return 256 if ctx.quick else 1024


def _shaped(ctx, media, n):
    got = shaped_dirs(ctx.session, ctx.bins, media, n)
    if got is None:
        raise Skip("the shaping layer peregrine-shape-fs is not built")
    return got


def ideal(media, n, label="ideal"):
    """fio straight on n member files, one job per member."""
    def setup(ctx):
        if media.shape:
            dirs, teardown, pids = _shaped(ctx, media, n)
            files = []
            for i, d in enumerate(dirs):
                f = os.path.join(d, f"member{i}")
                systems.fill(f, file_mib(ctx), direct=False)
                files.append(f)
            return Target(label=label, files=files, per_file_jobs=True, file_size=f"{file_mib(ctx)}M",
                          pids=pids), teardown
        return systems.raw_members(ctx.session, media.dir, n, file_mib(ctx), label=label,
                                   per_file_jobs=True)
    return Config(label, setup)


def one_member(media):
    """I: fio on one member file (the member side of L)."""
    def setup(ctx):
        return systems.raw_members(ctx.session, media.dir, 1, file_mib(ctx), label="I",
                                   per_file_jobs=False)
    return Config("I", setup)


def null_fuse(media, transport):
    def setup(ctx):
        return systems.null_fuse(ctx.session, ctx.bins, media.dir, transport, file_mib(ctx))
    return Config(f"null-{transport}", setup)


def peregrine(media, transport, members=4, options=(), name=None, stripe_unit=None, shape=None):
    name = name or f"peregrine-{transport}"

    def setup(ctx):
        v = systems.Volume(ctx.session, ctx.bins, media.dir, members, transport=transport,
                           options=options, shape=shape or media.shape, stripe_unit=stripe_unit,
                           member_mib=member_mib(ctx), file_mib=file_mib(ctx), label=name)
        return v.target, v.teardown
    return Config(name, setup)


def per_volume(media, transport, members=4, name="per-volume"):
    return peregrine(media, transport, members, options=("engine.scheduler=per-volume",), name=name)


def mergerfs(ctx, media, name, members=4, setting=None, note=None):
    setting = setting or mergerfs_settings(ctx)[name]
    binary = mergerfs_binary(ctx)
    version = f" {ctx.peers.mergerfs_version}" if ctx.peers.mergerfs else ""

    def setup(ctx):
        dirs, shape_down, shape_pids = None, (lambda: None), []
        if media.shape:
            dirs, shape_down, shape_pids = _shaped(ctx, media, members)
        try:
            t, td = systems.mergerfs(ctx.session, media.dir, members, setting, file_mib(ctx), branch_dirs=dirs,
                                     binary=binary)
        except subprocess.CalledProcessError as e:
            shape_down()
            if not ctx.peers.mergerfs:
                raise
            raise Skip(f"{binary} did not mount or fill ({e})")
        t.label = name
        # The shaping layer's CPU is the device's, not mergerfs's: left out.

        def teardown():
            td()
            shape_down()
        return t, teardown
    return Config(name, setup, note=note or f"{name}: mergerfs{version} -o {setting}")


def peer_mergerfs_passthrough(ctx, media, members=4):
    """mergerfs passthrough.io=rw over the same branches as the other mergerfs
    rows: kernel speed per file, but the file is on one branch."""
    name = "mergerfs-passthrough"
    if not ctx.peers.mergerfs_at_least(2, 41):
        def skip(ctx):
            raise Skip(f"mergerfs {ctx.peers.mergerfs_version} has no passthrough.io (2.41 or later)")
        return Config(name, skip)
    return mergerfs(ctx, media, name, members, setting=PEER_MERGERFS_PASSTHROUGH,
                    note=f"{name}: mergerfs {ctx.peers.mergerfs_version} -o {PEER_MERGERFS_PASSTHROUGH}; "
                         f"one file on one member of {members}: the kernel serves its IO, but it cannot "
                         "stripe, so on shaped members it sees one member's IOPS")


def peer_passthrough_hp(ctx, media, uring):
    """libfuse's passthrough_hp over one source directory on the medium (on
    shaped media, one shaped drive): it does not stripe."""
    name = "ph-uring" if uring else "ph-classic"
    flags = "--nopassthrough" + (" -o io_uring" if uring else "")

    def setup(ctx):
        src, shape_down = None, (lambda: None)
        if media.shape:
            dirs, shape_down, _ = _shaped(ctx, media, 1)
            src = dirs[0]
        try:
            t, td = systems.passthrough_hp(ctx.session, ctx.peers.passthrough_hp, media.dir, file_mib(ctx),
                                           uring, source_dir=src, label=name)
        except subprocess.CalledProcessError as e:
            shape_down()
            raise Skip(f"{ctx.peers.passthrough_hp} did not mount or fill ({e})")

        def teardown():
            td()
            shape_down()
        return t, teardown
    return Config(name, setup, note=f"{name}: passthrough_hp (libfuse {ctx.peers.passthrough_hp_version}) {flags} "
                                    "SOURCE MNT, default threads; one source directory (one member): "
                                    "it does not stripe")


def peers(ctx, media, members=4):
    """The peer rows of the fio cases: mergerfs at its two thread settings
    (Debian's, or the --peer-mergerfs build), with a build also its
    passthrough row; with --peer-passthrough-hp, ph-uring (when this run has
    FUSE over io_uring) and ph-classic."""
    out = []
    if ctx.have_mergerfs:
        out += [mergerfs(ctx, media, name, members) for name in mergerfs_settings(ctx)]
    if ctx.peers.mergerfs:
        out.append(peer_mergerfs_passthrough(ctx, media, members))
    if ctx.peers.passthrough_hp:
        if ctx.fuse_uring:
            out.append(peer_passthrough_hp(ctx, media, uring=True))
        out.append(peer_passthrough_hp(ctx, media, uring=False))
    return out


def directories(ctx, media, transport, volume_member_mib=None, writeback=False):
    """Configurations whose target is a directory to work in: a peregrine
    volume, mergerfs (default setting) and a native directory, on media;
    with `writeback`, also a volume with fuse.cache=writeback (the setting
    for buffered IO: the kernel page cache absorbs the writes)."""
    def volume(options, label):
        def setup(ctx):
            v = systems.Volume(ctx.session, ctx.bins, media.dir, 4, transport=transport, fill_file=False,
                               member_mib=volume_member_mib or member_mib(ctx), options=options, label=label)
            return v.mnt, v.teardown
        return setup

    def merger(ctx):
        t, td = systems.mergerfs(ctx.session, media.dir, 4, mergerfs_settings(ctx)["mergerfs-default"], 1,
                                 binary=mergerfs_binary(ctx))
        return os.path.dirname(t.files[0]), td

    def native(ctx):
        d = ctx.session.workdir(media.dir, "native")
        return d, lambda: ctx.session.remove(d)
    out = [Config("peregrine", volume((), "peregrine"))]
    if writeback:
        out.append(Config("peregrine-writeback", volume(("fuse.cache=writeback",), "peregrine-writeback"),
                          note="peregrine-writeback: -o fuse.cache=writeback"))
    if ctx.have_mergerfs:
        out.append(Config("mergerfs-default", merger))
    out.append(Config(f"native-{media.name}", native))
    return out
