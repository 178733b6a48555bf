"""CPU seconds per stage of a vpeval run, robust to other jobs on the machine.

Runs a command (default: the demo), samples the CPU time (user + system) of its whole process tree
twice a second from /proc, and attributes it to stages from the run log: each "<stage> <label>:
computed in T s" line covers the T seconds before it. Wall times move with the machine's load; the
CPU seconds of a stage do not (much).

    python benchmarks/demo_stage_cpu.py --log runs/demo/run.log -- bash scripts/demo.sh --quiet
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
LINE = re.compile(r"^(\S+ \S+) INFO \S+: (\S+) (.+?): computed in ([0-9.]+) s")


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of `root`, its live descendants and the children they reaped."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(entry)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            f = stats[pid]
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total / TICK


def sample(command: list[str], every: float) -> tuple[list[float], list[float], float]:
    proc = subprocess.Popen(command)
    times, cpu = [], []
    while proc.poll() is None:
        times.append(time.time())
        cpu.append(tree_cpu(proc.pid))
        time.sleep(every)
    times.append(time.time())
    usage = os.times()
    cpu.append(max(cpu[-1] if cpu else 0.0, usage.children_user + usage.children_system))
    if proc.returncode:
        sys.exit(f"command failed with exit code {proc.returncode}")
    return times, cpu, times[-1] - times[0]


def cpu_at(times: list[float], cpu: list[float], t: float) -> float:
    i = bisect.bisect_left(times, t)
    if i <= 0:
        return cpu[0]
    if i >= len(times):
        return cpu[-1]
    t0, t1 = times[i - 1], times[i]
    return cpu[i - 1] + (cpu[i] - cpu[i - 1]) * (t - t0) / max(t1 - t0, 1e-9)


def stage_group(stage: str, label: str) -> str:
    """Stage rows of the demo table (metric rows grouped per metric)."""
    if stage == "metrics":
        return f"metrics:{label.split(' on ')[0].split('(')[0]}"
    if stage in ("score", "train"):
        return f"{stage}:{label.split(' ')[0]}"
    if stage == "anonymize":
        return f"anonymize:{label.split(' ')[0].split('(')[0]}"
    return f"{stage}:{label}"


def attribute(log: Path, times: list[float], cpu: list[float], start: float) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        m = LINE.match(line)
        if not m:
            continue
        end = dt.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if end < start:
            continue  # an earlier run's lines in the same log
        took = float(m[4])
        row = groups.setdefault(stage_group(m[2], m[3]), [0.0, 0.0])
        row[0] += took
        row[1] += cpu_at(times, cpu, end) - cpu_at(times, cpu, end - took)
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, default=Path("runs/demo/run.log"))
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--json", type=Path, help="also write the table here")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    times, cpu, wall = sample(args.command, args.every)
    groups = attribute(args.log, times, cpu, times[0])
    known = sum(c for _, c in groups.values())
    print(f"{'stage':44s} {'wall s':>8s} {'CPU s':>8s}")
    for name, (w, c) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:44s} {w:8.1f} {c:8.1f}")
    print(f"{'other (data, model loading, report)':44s} {'':8s} {cpu[-1] - known:8.1f}")
    print(f"{'total':44s} {wall:8.1f} {cpu[-1]:8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"wall": wall, "cpu": cpu[-1], "stages": groups}, indent=1))


if __name__ == "__main__":
    main()
