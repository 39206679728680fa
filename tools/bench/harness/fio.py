"""fio jobs and what the report keeps of them.

A Workload says what the application does (pattern, block size, depth,
jobs); run() starts fio on a Target's files, saves fio's raw JSON, and
returns one flat record. Process CPU and peak memory of the daemon under
test come from /proc around the run, so every system is measured alike.
"""
import json
import os
import subprocess
from dataclasses import dataclass, field

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Workload:
    rw: str            # randread, randwrite, read, write
    bs: str = "4k"
    qd: int = 1        # total outstanding IOs of the application
    jobs: int = 1      # application threads sharing the depth
    direct: bool = True
    size: str = ""     # per file; "" = the target's file size
    end_fsync: bool = False
    extra: list = field(default_factory=list)

    @property
    def name(self):
        jobs = f"-{self.jobs}j" if self.jobs > 1 else ""
        io = "" if self.direct else "-buffered"
        return f"{self.rw}-{self.bs}-qd{self.qd}{jobs}{io}"

    @property
    def kind(self):
        return "read" if "read" in self.rw else "write"


@dataclass
class Target:
    """What a system under test offers: files to run fio on, and the
    processes whose CPU and memory are the system's cost."""
    label: str
    files: list                 # fio runs one job per file when per_file_jobs
    pids: list = field(default_factory=list)
    per_file_jobs: bool = False  # the ideal reference: one job per member
    file_size: str = "1G"
    stats: object = None        # callable returning peregrine stats JSON, or None


def cpu_ticks(pids):
    """(user, system) clock ticks the processes have used. Kept apart
    because they point at different fixes: user time is the daemon's own
    code, system time the kernel's FUSE, io_uring and copy work."""
    user = system = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])    # utime
            system += int(fields[12])  # stime
        except (OSError, IndexError, ValueError):
            pass
    return user, system


def peak_rss_kib(pids):
    peak = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
    return peak


def run(target, workload, seconds, raw_path):
    """Runs one fio invocation; returns the record (zeros and an 'error' on failure)."""
    common = [
        "fio", "--output-format=json", "--group_reporting",
        f"--ioengine={'io_uring' if workload.direct else 'psync'}",
        f"--direct={1 if workload.direct else 0}",
        f"--rw={workload.rw}", f"--bs={workload.bs}",
        f"--size={workload.size or target.file_size}",
        "--norandommap", "--randrepeat=0", "--allow_file_create=0",
    ]
    if workload.end_fsync:
        common.append("--end_fsync=1")
    else:
        common += ["--time_based", f"--runtime={seconds}"]
    common += workload.extra
    if target.per_file_jobs:
        depth = max(1, workload.qd // len(target.files))
        jobs = []
        for i, f in enumerate(target.files):
            jobs += [f"--name=m{i}", f"--filename={f}", f"--iodepth={depth}"]
    else:
        depth = max(1, workload.qd // workload.jobs)
        jobs = ["--name=app", f"--filename={target.files[0]}", f"--iodepth={depth}",
                f"--numjobs={workload.jobs}"]
        if not workload.direct:
            jobs[-2] = "--iodepth=1"
    t0 = cpu_ticks(target.pids)
    proc = subprocess.run(common + jobs, capture_output=True, text=True)
    t1 = cpu_ticks(target.pids)
    os.makedirs(os.path.dirname(raw_path), exist_ok=True)
    with open(raw_path, "w") as f:
        f.write(proc.stdout)
    user_s = (t1[0] - t0[0]) / CLK_TCK
    system_s = (t1[1] - t0[1]) / CLK_TCK
    record = {"iops": 0.0, "mib_s": 0.0, "lat_us": 0.0, "p99_us": 0.0, "ios": 0,
              "cpu_us_per_io": 0.0, "user_us_per_io": 0.0, "sys_us_per_io": 0.0,
              "daemon_cpu_s": user_s + system_s}
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["fio failed"])[0]
        record["error"] = first
        return record
    try:
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        record["error"] = "fio printed no JSON"
        return record
    job = data["jobs"][0][workload.kind]
    record["iops"] = job["iops"]
    record["mib_s"] = job["bw_bytes"] / (1 << 20)
    record["lat_us"] = job["clat_ns"]["mean"] / 1000
    pct = job["clat_ns"].get("percentile", {})
    record["p99_us"] = pct.get("99.000000", 0) / 1000
    record["ios"] = job["total_ios"]
    if job["total_ios"] and target.pids:
        record["user_us_per_io"] = user_s * 1e6 / job["total_ios"]
        record["sys_us_per_io"] = system_s * 1e6 / job["total_ios"]
        record["cpu_us_per_io"] = record["user_us_per_io"] + record["sys_us_per_io"]
    return record
