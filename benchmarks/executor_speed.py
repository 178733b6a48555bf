"""Anonymization throughput by executor, and the cost of one task.

McAdams (its defaults) on a generated corpus, run as the runner runs it (vpeval.run.anonymize_task), on
the local executor with 1 and 2 forked workers and on a Dask LocalCluster with 1 and 2 worker
processes (one thread each). Dask workers build and prepare the anonymizer themselves, so the first
map on a fresh cluster ("cold") is timed apart from later ones ("warm"). Per-task overhead: many
tasks that do nothing (one item per task), local and Dask.

Map stages: plugins' per-utterance stages go through PluginContext.map with a function that closes over
a model. Timed with GE2E embedding (resemblyzer's d-vector model, the ge2e attacker's embed) on the same
corpus, locally and on Dask: "cold" is the first map on fresh workers (they import torch and unpickle the
function), "new func" a map of a new function (other bytes) on warm workers, which ships and unpickles
it again as every new map call of a run does, "warm" repeats the identical function (the workers keep
it). Per-task
overhead: PluginContext.map of a function that does nothing, one item per task.

    OMP_NUM_THREADS=1 python benchmarks/executor_speed.py [--speakers 20] [--utterances 10] [--seconds 3] [--runs 2]
                                                         [--only anonymize|map]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from vpeval.api import PluginContext  # noqa: E402
from vpeval.builtin.local_executor import LocalProcesses  # noqa: E402
from vpeval.codehash import code_fingerprint  # noqa: E402
from vpeval.config import ResolvedAnonymizer, ResolvedPlugin  # noqa: E402
from vpeval.plugins import get_plugin_manager  # noqa: E402
from vpeval.run.anonymize_task import AnonymizeTask  # noqa: E402
from vpeval.testing.dummies import make_corpus  # noqa: E402


def nothing(item):
    return item


def process_cpu() -> float:
    """CPU seconds of this process and of its reaped children (forked workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_of(executor) -> float:
    """CPU seconds the executor's processes used so far: the Dask workers', or this process's and its children's."""
    client = getattr(executor, "_client", None)
    if client is None:
        return process_cpu()
    return sum(client.run(process_cpu).values())


def mcadams_chain() -> ResolvedAnonymizer:
    cls = get_plugin_manager().get("anonymizer", "mcadams")
    step = ResolvedPlugin(
        kind="anonymizer",
        use="mcadams",
        params=cls.Params().model_dump(mode="json"),
        distribution=cls.distribution,
        version=cls.version,
        label="mcadams",
        code=code_fingerprint(cls),
    )
    return ResolvedAnonymizer(label="mcadams", level="utterance", steps=[step])


def time_map(executor, task, items, runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (of the processes that did the work) per run."""
    times, cpu = [], []
    for _ in range(runs):
        shutil.rmtree(task.partial, ignore_errors=True)
        task.partial.mkdir(parents=True)
        cpu_before = cpu_of(executor)
        start = time.perf_counter()
        done = list(executor.map(task, items, "bench"))
        times.append(time.perf_counter() - start)
        cpu.append(cpu_of(executor) - cpu_before)
        assert len(done) == len(items)
    return times, cpu


def overhead(executor, tasks: int) -> float:
    start = time.perf_counter()
    assert len(list(executor.map(nothing, list(range(tasks)), "empty"))) == tasks
    return (time.perf_counter() - start) / tasks


def ge2e_embedder():
    """The ge2e attacker's encoder, loaded here, and a map function that closes over it (as plugins do)."""
    cls = get_plugin_manager().get("attacker", "ge2e")
    attacker = cls(cls.Params(), PluginContext())
    encoder = attacker.encoder
    encoder.prepare()
    return lambda u: encoder.embed(u.load(encoder.sample_rate))


def time_context_map(context: PluginContext, func, items, runs: int, cpu: list[float] | None = None) -> list[float]:
    """Wall seconds per run; CPU seconds of the processes that did the work appended to `cpu`."""
    times = []
    for _ in range(runs):
        cpu_before = cpu_of(context.executor)
        start = time.perf_counter()
        assert len(context.map(func, items, "bench-map")) == len(items)
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(cpu_of(context.executor) - cpu_before)
    return times


def map_stage_rows(items, runs: int, empty_tasks: int, cache_root: Path) -> list[tuple]:
    """(label, pickled MB, (cold s, new func s), warm s, utterances/s warm, warm CPU s, ms per empty task)."""
    import cloudpickle

    from vpeval_dask.executor import DaskExecutor

    embed = ge2e_embedder()
    megabytes = len(cloudpickle.dumps(embed)) / 1e6
    rows = []
    for workers in (1, 2):
        context = PluginContext(workers=workers, executor=LocalProcesses(context=PluginContext(workers=workers)))
        cpu: list[float] = []
        warm = statistics.median(time_context_map(context, embed, items, runs, cpu))
        empty = statistics.median(time_context_map(context, nothing, list(range(empty_tasks)), 1)) / empty_tasks
        rows.append((f"local, workers {workers}", None, None, warm, len(items) / warm, statistics.median(cpu), empty))
    for workers in (1, 2):
        dask = DaskExecutor(
            DaskExecutor.Params(workers=workers, batch=16), PluginContext(options={"cache_root": cache_root})
        )
        dask.client.wait_for_workers(workers)
        context = PluginContext(executor=dask)
        cold = time_context_map(context, embed, items, 1)[0]
        cpu = []
        warm = statistics.median(time_context_map(context, embed, items, runs, cpu))
        fresh = time_context_map(context, lambda u, _other=workers: embed(u), items, 1)[0]
        one_per_task = DaskExecutor(
            DaskExecutor.Params(address=dask.client.scheduler.address, batch=1),
            PluginContext(options={"cache_root": cache_root}),
        )
        empty = (
            time_context_map(PluginContext(executor=one_per_task), nothing, list(range(empty_tasks)), 1)[0]
            / empty_tasks
        )
        one_per_task.close()
        dask.close()
        rows.append(
            (
                f"dask LocalCluster, {workers} worker(s)",
                megabytes,
                (cold, fresh),
                warm,
                len(items) / warm,
                statistics.median(cpu),
                empty,
            )
        )
    return rows


def print_map_rows(rows: list[tuple]) -> None:
    print(
        f"\nmap stage (ge2e embed)\n{'executor':32s} {'func MB':>8s} {'cold s':>8s} {'new func s':>10s} "
        f"{'warm s':>8s} {'utt/s':>7s} "
        f"{'vs local 1':>10s} {'CPU s':>7s} {'ms/empty task':>13s}"
    )
    base = rows[0][3]
    for label, megabytes, cold, warm, rate, cpu_s, empty in rows:
        mb, cold_s, fresh_s = (
            (f"{megabytes:8.1f}", f"{cold[0]:8.2f}", f"{cold[1]:10.2f}")
            if cold is not None
            else (f"{'':8s}", f"{'':8s}", f"{'':10s}")
        )
        print(
            f"{label:32s} {mb} {cold_s} {fresh_s} {warm:8.2f} {rate:7.1f} {base / warm:10.2f} {cpu_s:7.2f} "
            f"{empty * 1000:13.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speakers", type=int, default=20)
    parser.add_argument("--utterances", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--empty-tasks", type=int, default=200)
    parser.add_argument("--only", choices=("anonymize", "map"), help="run one of the two benchmarks")
    args = parser.parse_args()

    from vpeval_dask.executor import DaskExecutor

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus = make_corpus(
            root / "corpus", args.speakers, args.utterances, seconds=args.seconds, seed=1, name="bench"
        )
        items = corpus.utterances
        audio_s = len(items) * args.seconds
        print(f"{len(items)} utterances, {audio_s:.0f} s of speech, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
        if args.only != "anonymize":
            print_map_rows(map_stage_rows(items, args.runs, args.empty_tasks, root / "cache"))
        if args.only == "map":
            return
        anon = mcadams_chain()
        rows = []

        for workers in (1, 2):
            task = AnonymizeTask(anon, 0, 1, root / "cache", root / "out-local")
            task._steps()  # prepared in this process before the fork, as the runner does
            local = LocalProcesses(context=PluginContext(workers=workers))
            times, cpu = time_map(local, task, items, args.runs)
            rows.append(
                (
                    f"local, workers {workers}",
                    None,
                    statistics.median(times),
                    statistics.median(cpu),
                    overhead(local, args.empty_tasks),
                )
            )
            task.forget()

        for workers in (1, 2):
            dask = DaskExecutor(
                DaskExecutor.Params(workers=workers), PluginContext(options={"cache_root": root / "cache"})
            )
            started = time.perf_counter()
            dask.client.wait_for_workers(workers)
            startup = time.perf_counter() - started
            task = AnonymizeTask(anon, 0, 1, root / "cache", root / f"out-dask{workers}")
            cold = time_map(dask, task, items, 1)[0][0]
            times, cpu = time_map(dask, task, items, args.runs)
            one_per_task = DaskExecutor(
                DaskExecutor.Params(address=dask.client.scheduler.address, batch=1),
                PluginContext(options={"cache_root": root / "cache"}),
            )
            per_task = overhead(one_per_task, args.empty_tasks)
            one_per_task.close()
            rows.append(
                (
                    f"dask LocalCluster, {workers} worker(s)",
                    (startup, cold),
                    statistics.median(times),
                    statistics.median(cpu),
                    per_task,
                )
            )
            dask.close()

        base = rows[0][2]
        print(
            f"\nanonymization (mcadams defaults)\n{'executor':32s} {'start s':>8s} {'cold s':>8s} {'warm s':>8s} "
            f"{'x real time':>11s} {'vs local 1':>10s} "
            f"{'CPU s':>7s} {'ms/empty task':>13s}"
        )
        for label, cold, warm, cpu_s, per_task in rows:
            start_s, cold_s = (f"{cold[0]:8.2f}", f"{cold[1]:8.2f}") if cold else (f"{'':8s}", f"{'':8s}")
            print(
                f"{label:32s} {start_s} {cold_s} {warm:8.2f} {audio_s / warm:11.1f} {base / warm:10.2f} {cpu_s:7.2f} "
                f"{per_task * 1000:13.2f}"
            )


if __name__ == "__main__":
    main()
