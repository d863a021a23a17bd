"""What capture costs the server under the 32-client load beyond its own CPU (issue 19, 8a).

    python -m benchmarks.contention [--http h11|httptools] [--loop asyncio|uvloop]
                                    [--rounds N] [--seconds S] [--side NAME=SRC ...]
                                    [--control US ...] [--perf]

Row 8a's load (32 asyncio clients of the 200-chunk chat stream, `benchmarks._stream_app`)
against two uvicorn servers, capture on and off, alternating; each `--side NAME=SRC` adds a
server, capture on, that runs the library from another source tree (`SRC` is put first on
its `PYTHONPATH`: an earlier commit's `src`), so versions of the code are measured side by
side in one run; each `--control US` adds an uncaptured server whose app burns US microseconds
on the event loop before each chunk it sends (about what capture spends there per chunk:
a server as slow on its loop thread as the captured one, with no write thread, no GIL
hand-off and no fsync). Per request and per side, from `/proc/PID/task/*`: voluntary and
involuntary context switches, user and system CPU and the time spent waiting on a run
queue (`schedstat`), each for the event-loop thread and for the other threads (the write
threads), how many threads are alive, and how often the load client slept (each time, a
send of the server has to wake it). Medians over the rounds, and every round's requests/s
ratio against off (the spread). `--perf` adds one round per side under `perf record`
(CPU samples with kernel stacks, where perf is installed): each thread's CPU per request
split into user code, each system call (the loopback send split into waking the client
and the rest), and the scheduler and interrupts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from .linerate import _client_loop
from .middleware import _server, _throughput

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class _Task:
    """Counters of one thread of the server, as /proc shows them."""

    voluntary: int = 0
    involuntary: int = 0
    user: float = 0.0
    system: float = 0.0
    queued: float = 0.0
    faults: int = 0
    ran: float = 0.0


@dataclass
class _Snapshot:
    """The server's threads at one moment: the event-loop thread, the sum of the others."""

    main: _Task
    others: _Task
    threads: int
    process_cpu: float


def _task(path: Path) -> _Task:
    status = {}
    for line in (path / "status").read_text().splitlines():
        key, _, value = line.partition(":")
        status[key] = value.strip()
    stat = (path / "stat").read_text().rsplit(")", 1)[1].split()
    sched = (path / "schedstat").read_text().split()
    return _Task(
        voluntary=int(status["voluntary_ctxt_switches"]),
        involuntary=int(status["nonvoluntary_ctxt_switches"]),
        user=int(stat[11]) / _TICK,
        system=int(stat[12]) / _TICK,
        queued=int(sched[1]) / 1e9,
        faults=int(stat[7]),
        ran=int(sched[0]) / 1e9,
    )


def _snapshot(pid: int) -> _Snapshot:
    main = _Task()
    others = _Task()
    threads = 0
    for path in Path(f"/proc/{pid}/task").iterdir():
        try:
            task = _task(path)
        except (FileNotFoundError, ProcessLookupError):  # a thread ended meanwhile
            continue
        threads += 1
        into = main if int(path.name) == pid else others
        for name in ("voluntary", "involuntary", "user", "system", "queued", "faults", "ran"):
            setattr(into, name, getattr(into, name) + getattr(task, name))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return _Snapshot(main, others, threads, (int(fields[11]) + int(fields[12])) / _TICK)


@dataclass
class _Side:
    """What one server did per request, round by round."""

    rates: list[float] = field(default_factory=list)
    per_request: dict[str, list[float]] = field(default_factory=dict)
    threads: list[int] = field(default_factory=list)

    def add(self, name: str, value: float) -> None:
        self.per_request.setdefault(name, []).append(value)


def _measure(side: _Side, pid: int, port: int, seconds: float, profile: str | None) -> None:
    """One round of the load against one server; with `profile` (where perf records it) only
    perf's figures are kept, as perf's own cost is in the round."""
    recorder = _perf_record(pid, seconds, profile) if profile else None
    before = _snapshot(pid)
    client = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    with asyncio.Runner(loop_factory=_client_loop()) as runner:
        rate = runner.run(_throughput(port, 32, seconds))
    after = _snapshot(pid)
    wall = time.perf_counter() - t0
    client_after = resource.getrusage(resource.RUSAGE_SELF)
    n = max(rate * wall, 1)
    if recorder is not None:
        recorder.wait()
        assert profile is not None
        for name, seconds_spent in _perf_split(pid, profile).items():
            side.add(f"perf: {name} ms", seconds_spent / n * 1e3)
        return
    side.rates.append(rate)
    side.threads.append(after.threads)
    side.add("process CPU ms", (after.process_cpu - before.process_cpu) / n * 1e3)
    for where in ("main", "others"):
        a, b = getattr(after, where), getattr(before, where)
        side.add(f"{where} voluntary switches", (a.voluntary - b.voluntary) / n)
        side.add(f"{where} involuntary switches", (a.involuntary - b.involuntary) / n)
        side.add(f"{where} user ms", (a.user - b.user) / n * 1e3)
        side.add(f"{where} system ms", (a.system - b.system) / n * 1e3)
        side.add(f"{where} run-queue wait ms", (a.queued - b.queued) / n * 1e3)
        side.add(f"{where} minor page faults", (a.faults - b.faults) / n)
    ran, queued = after.main.ran - before.main.ran, after.main.queued - before.main.queued
    side.add("main thread asleep, % of wall", (wall - ran - queued) / wall * 100)
    side.add("main thread on a run queue, % of wall", queued / wall * 100)
    side.add("load client: times it slept", (client_after.ru_nvcsw - client.ru_nvcsw) / n)


_PERF_HZ = 999


def _perf_record(pid: int, seconds: float, out: str) -> subprocess.Popen[bytes]:
    """`perf record` of every thread of `pid` for `seconds` (CPU samples, kernel stacks)."""
    sampling = ["-q", "-g", "-F", str(_PERF_HZ), "-p", str(pid)]
    return subprocess.Popen(
        ["perf", "record", "-o", out, *sampling, "--", "sleep", str(seconds)],
        stderr=subprocess.DEVNULL,
    )


def _perf_split(pid: int, data: str) -> dict[str, float]:
    """CPU seconds by thread and by what the kernel was doing, from a `perf record`."""
    script = subprocess.run(
        ["perf", "script", "-i", data, "-F", "tid,ip,sym"],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    os.unlink(data)
    spent: dict[str, float] = {}
    for sample in script.split("\n\n"):
        lines = sample.strip().splitlines()
        if not lines or not lines[0].strip().isdigit():
            continue
        frames = [line.split()[1].split("+")[0] for line in lines[1:] if len(line.split()) > 1]
        where = "main" if int(lines[0]) == pid else "others"
        name = f"{where} {_perf_kind(frames)}"
        spent[name] = spent.get(name, 0.0) + 1 / _PERF_HZ
    return spent


def _perf_kind(frames: list[str]) -> str:
    """What one sample was doing: user code, a system call (the loopback send split in two:
    waking the reading client, the rest), or the scheduler and interrupts."""
    call = next((f[len("__x64_sys_") :] for f in frames if f.startswith("__x64_sys_")), None)
    if call == "sendto":
        return "send, waking the client" if "sock_def_readable" in frames else "send, the rest"
    if call is not None:
        return f"syscall {call}"
    kernel = ("finish_task_switch", "__schedule", "_raw_spin", "asm_")
    if frames and any(f.startswith(kernel) for f in frames[:6]):
        return "scheduler and interrupts"
    return "user code"


def main() -> None:
    """Measure, print a table per side."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.contention")
    parser.add_argument("--http", default="h11", choices=("h11", "httptools"))
    parser.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--side",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="one more server, capture on, with the library from the source tree SRC",
    )
    parser.add_argument(
        "--perf", action="store_true", help="one more round per side, profiled with perf"
    )
    parser.add_argument(
        "--control",
        type=float,
        action="append",
        default=[],
        metavar="US",
        help="one more server, capture off, burning US microseconds on its loop per chunk",
    )
    args = parser.parse_args()
    options = ["--app", "stream", "--http", args.http, "--loop", args.loop]
    sources: dict[str, str | None] = {"on": None, "off": None}
    for side in args.side:
        name, _, src = side.partition("=")
        sources[name] = src
    spins = {f"spin{us:g}us": us for us in args.control}
    sources.update(dict.fromkeys(spins))
    sides = {name: _Side() for name in sources}
    with tempfile.TemporaryDirectory(prefix="mcc-contention-") as tmp, ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                _server(
                    "on" if name != "off" and name not in spins else "off",
                    tmp,
                    *options,
                    *(["--spin-us", str(spins[name])] if name in spins else []),
                    src=sources[name],
                )
            )
            for name in sides
        }
        order = list(sides)
        for i in range(args.rounds + args.perf):  # with --perf, one more round, profiled
            for name in order[i % len(order) :] + order[: i % len(order)]:
                port, pid = servers[name]
                profile = f"{tmp}/{name}.perf" if i == args.rounds else None
                _measure(sides[name], pid, port, args.seconds, profile)
    _print(args, sides)


def _print(args: argparse.Namespace, sides: dict[str, _Side]) -> None:
    off = sides["off"]
    print(f"stack {args.http} + {args.loop}, {args.rounds} x {args.seconds:g} s per side")
    for name, side in sides.items():
        ratios = "/".join(f"{a / b:.2f}" for a, b in zip(side.rates, off.rates, strict=True))
        print(
            f"{name:>5}: {statistics.median(side.rates):7.0f} req/s, per round vs off "
            f"{ratios}; threads alive {side.threads}"
        )
    seen = {name: None for side in sides.values() for name in side.per_request}
    names = sorted(seen, key=_order)  # stable: /proc's figures stay in the order measured
    print(f"{'per request (median)':44}" + "".join(f"{n:>10}" for n in sides))
    for metric in names:
        cells = "".join(
            f"{statistics.median(s.per_request.get(metric, [0.0])):10.3f}" for s in sides.values()
        )
        print(f"{metric:44}{cells}")


def _order(name: str) -> tuple[bool, str]:
    """/proc figures first, in the order measured; perf's after them, by name."""
    return (name.startswith("perf:"), name if name.startswith("perf:") else "")


if __name__ == "__main__":
    main()
