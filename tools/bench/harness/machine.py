"""The machine and software a run measured, recorded with its results."""
import os
import platform
import subprocess


def _out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _deb(pkg):
    return _out(["dpkg-query", "-W", "-f=${Version}", pkg]) or None


def describe(root):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    try:
        with open("/sys/module/fuse/parameters/enable_uring") as f:
            uring = f.read().strip()
    except OSError:
        uring = "absent"
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(mem_kib / 1048576, 1),
        "fuse_enable_uring_at_start": uring,
        "libfuse": _deb("libfuse3-3"),
        "liburing": _deb("liburing2"),
        "fio": _out(["fio", "--version"]),
        "mergerfs": _deb("mergerfs"),
        "peregrine_commit": _out(["git", "-C", root, "describe", "--always", "--dirty"]),
        "debian": _out(["cat", "/etc/debian_version"]),
    }
