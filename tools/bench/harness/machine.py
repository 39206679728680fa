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


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def idle_wakeups():
    """How idle CPUs wait, which sets what a cross-CPU wake-up costs: on a
    virtual machine whose idle vCPUs halt without polling first (guest
    haltpoll off), each wake of an idle CPU exits to the hypervisor, 10 us
    or more, and QD 1 and one-thread metadata figures follow it
    (docs/transport.md, "Light load")."""
    driver = _read("/sys/devices/system/cpu/cpuidle/current_driver") or "none"
    poll_ns = _read("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
    return driver + (f", guest_halt_poll_ns {poll_ns}" if poll_ns is not None else "")


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
        "cpuidle": idle_wakeups(),
        "libfuse": _deb("libfuse3-3"),
        "liburing": _deb("liburing2"),
        "fio": _out(["fio", "--version"]),
        "mergerfs": _deb("mergerfs"),
        "peregrine_commit": _out(["git", "-C", root, "describe", "--always", "--dirty"]),
        "debian": _out(["cat", "/etc/debian_version"]),
    }
