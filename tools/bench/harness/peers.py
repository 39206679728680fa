"""Peer FUSE daemons given by path (--peer-mergerfs, --peer-passthrough-hp).

The versions the comparison wants (mergerfs 2.41, libfuse's passthrough_hp
from git master) are not in Debian 12, so they are built from their public
sources outside the repo (docs/performance.md, "Peers") and handed to the
harness by path. This module checks such a path before anything is
mounted (exists, is an executable file, is the program it claims to be)
and asks it its version; the cases only read the result.
"""
import ctypes
import os
import re
import subprocess
from dataclasses import dataclass


class PeerError(Exception):
    """A --peer-* path that cannot be used; the message names it and why."""


@dataclass
class Peers:
    mergerfs: str = None               # path of a mergerfs build, or None (Debian's, if installed)
    mergerfs_version: str = None       # "2.41.1", as the binary reports it
    passthrough_hp: str = None         # path of libfuse's example/passthrough_hp, or None
    passthrough_hp_version: str = None  # the libfuse it runs on: "3.19.0-rc0"
    passthrough_hp_lib: str = None      # that libfuse3 library's path

    @property
    def any(self):
        return bool(self.mergerfs or self.passthrough_hp)

    def mergerfs_at_least(self, major, minor):
        m = re.match(r"(\d+)\.(\d+)", self.mergerfs_version or "")
        return bool(m) and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def _executable(path, flag):
    if not os.path.exists(path):
        raise PeerError(f"{flag} {path}: no such file")
    if not os.path.isfile(path):
        raise PeerError(f"{flag} {path}: not a regular file")
    if not os.access(path, os.X_OK):
        raise PeerError(f"{flag} {path}: not executable")
    return os.path.abspath(path)


def _run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        raise PeerError(f"{cmd[0]}: cannot run it ({e})")
    return p.stdout + p.stderr


def mergerfs_version(path, flag="--peer-mergerfs"):
    """'2.41.1' from `mergerfs --version` ('mergerfs v2.41.1' on its first
    line; Debian's 2.33 says 'mergerfs version: 2.33.5')."""
    out = _run([path, "--version"])
    m = re.search(r"mergerfs (?:version: *)?v?(\d[\w.+~-]*)", out)
    if not m:
        first = (out.strip().splitlines() or ["nothing"])[0]
        raise PeerError(f"{flag} {path}: does not say it is mergerfs (--version printed: {first})")
    return m.group(1)


def passthrough_hp_version(path, flag="--peer-passthrough-hp"):
    """(version, library) of the libfuse the binary runs on: passthrough_hp
    has no --version, so the libfuse3 library it loads (ldd) is asked with
    fuse_pkgversion(). Also checks --help offers the flags the rows use."""
    help_text = _run([path, "--help"])
    for needed in ("--nopassthrough", "io_uring"):
        if needed not in help_text:
            raise PeerError(f"{flag} {path}: its --help has no {needed} (not libfuse's example/passthrough_hp "
                            "from libfuse 3.18 or later?)")
    lib = None
    for line in _run(["ldd", path]).splitlines():
        if "libfuse3.so" in line:
            parts = line.split("=>")
            if len(parts) < 2 or "not found" in parts[1]:
                raise PeerError(f"{flag} {path}: its libfuse3 library is not found ({line.strip()})")
            lib = os.path.normpath(parts[1].split("(")[0].strip())
    if not lib:
        raise PeerError(f"{flag} {path}: does not link libfuse3")
    try:
        fn = ctypes.CDLL(lib).fuse_pkgversion
        fn.restype = ctypes.c_char_p
        return fn().decode(), lib
    except (OSError, AttributeError) as e:
        raise PeerError(f"{flag} {path}: cannot read the version of {lib} ({e})")


def check(mergerfs=None, passthrough_hp=None):
    """Peers from the command line's paths, validated and versioned;
    raises PeerError with a message naming the flag, the path and the problem."""
    p = Peers()
    if mergerfs:
        p.mergerfs = _executable(mergerfs, "--peer-mergerfs")
        p.mergerfs_version = mergerfs_version(p.mergerfs)
    if passthrough_hp:
        p.passthrough_hp = _executable(passthrough_hp, "--peer-passthrough-hp")
        p.passthrough_hp_version, p.passthrough_hp_lib = passthrough_hp_version(p.passthrough_hp)
    return p


def recorded(args, machine):
    """Peers of an earlier run (--report-only): the paths from its
    arguments and the versions from its machine record, nothing probed
    (the binaries may be gone)."""
    peers = machine.get("peers", {}) if machine else {}
    return Peers(mergerfs=getattr(args, "peer_mergerfs", None),
                 mergerfs_version=peers.get("mergerfs"),
                 passthrough_hp=getattr(args, "peer_passthrough_hp", None),
                 passthrough_hp_version=peers.get("passthrough_hp"),
                 passthrough_hp_lib=peers.get("passthrough_hp_lib"))
