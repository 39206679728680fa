"""Configurations shared by the fio cases: the references and peregrine."""
import os

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


def mergerfs(media, name, members=4):
    setting = MERGERFS_SETTINGS[name]

    def setup(ctx):
        dirs, shape_down, shape_pids = None, (lambda: None), []
        if media.shape:
            dirs, shape_down, shape_pids = _shaped(ctx, media, members)
        t, td = systems.mergerfs(ctx.session, media.dir, members, setting, file_mib(ctx), branch_dirs=dirs)
        t.label = name
        # The shaping layer's CPU is the device's, not mergerfs's: left out.

        def teardown():
            td()
            shape_down()
        return t, teardown
    return Config(name, setup, note=f"{name}: -o {setting}")


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
        t, td = systems.mergerfs(ctx.session, media.dir, 4, MERGERFS_SETTINGS["mergerfs-default"], 1)
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
