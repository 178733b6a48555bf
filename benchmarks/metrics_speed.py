"""Score metrics on large trial lists, one CPU core.

1. EER (step and ROCCH) + normalised minDCF (p_target 0.01 and 0.001) + Cllr + min Cllr on 10 million
   trials: one sort, then cumulative sums (vpeval_scoring).
2. The step EER against speechbrain.utils.metric_stats.EER (the function VoicePrivacy 2024 ranks with)
   on 100 000 trials: time and value agreement.
3. Speaker-level bootstrap: 1000 replicates on 100 000 trials (step EER, min Cllr).
4. `vpeval metrics --scores` on a 1-million-trial score file (the default metrics, no bootstrap), in
   process and as the CLI command.

    OMP_NUM_THREADS=1 python benchmarks/metrics_speed.py [--trials 10000000] [--sb-trials 100000] [--runs 3]

Wall time and process CPU time are both reported: on a shared machine the CPU time is the steadier one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vpeval.api import MetricInputs, PluginContext  # noqa: E402
from vpeval.types import Scores  # noqa: E402
from vpeval_scoring.cllr import actual_cllr, min_cllr  # noqa: E402
from vpeval_scoring.dcf import error_rates, min_dcf  # noqa: E402
from vpeval_scoring.eer import rocch_eer, step_eer  # noqa: E402
from vpeval_scoring.sorted_trials import SortedTrials  # noqa: E402


def synthetic_scores(n: int, speakers: int, seed: int = 0, ids: bool = False) -> Scores:
    """Gaussian scores, 10 % targets, a per-speaker offset, half female; cosine-like scale.
    Speaker names and utterance ids (memory-hungry at 10 million) only when asked for."""
    rng = np.random.default_rng(seed)
    spk = rng.integers(0, speakers, n)
    targets = rng.random(n) < 0.1
    offset = rng.normal(0, 0.05, speakers)[spk]
    scores = np.where(targets, rng.normal(0.55, 0.15, n), rng.normal(0.2, 0.12, n)) + offset
    genders = np.where(spk % 2 == 0, "f", "m")
    if not ids:
        return Scores(scores, targets, genders)
    names = np.array([f"spk{k:05d}" for k in range(speakers)])[spk]
    return Scores(scores, targets, genders, names, None, names, np.array([f"utt{i}" for i in range(n)], dtype=object))


def clock(fn, runs: int) -> dict:
    walls, cpus, out = [], [], None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {
        "wall_s": walls,
        "cpu_s": cpus,
        "median_wall_s": statistics.median(walls),
        "median_cpu_s": statistics.median(cpus),
        "result": out,
    }


def ten_million(n: int, runs: int) -> dict:
    s = synthetic_scores(n, speakers=2000)

    def all_metrics():
        trials = SortedTrials(s.scores, s.targets)
        tally = trials.tally()
        rates = error_rates(tally)
        return {
            "eer_step_%": 100 * step_eer(tally).eer,
            "eer_rocch_%": 100 * rocch_eer(tally).eer,
            "min_dcf_0.01": min_dcf(tally, 0.01, rates=rates).value,
            "min_dcf_0.001": min_dcf(tally, 0.001, rates=rates).value,
            "cllr_bits": actual_cllr(s.scores, s.targets),
            "min_cllr_bits": min_cllr(tally),
        }

    def sort_only():
        return SortedTrials(s.scores, s.targets).tally().n_tar

    return {"trials": n, "all": clock(all_metrics, runs), "sort_and_tally": clock(sort_only, runs)}


def speechbrain_agreement(n: int, runs: int) -> dict:
    import torch
    from speechbrain.utils.metric_stats import EER

    torch.set_num_threads(1)
    s = synthetic_scores(n, speakers=500, seed=1)
    pos, neg = torch.tensor(s.scores[s.targets]), torch.tensor(s.scores[~s.targets])
    ours = clock(lambda: step_eer(SortedTrials(s.scores, s.targets).tally()), runs)
    theirs = clock(lambda: EER(pos, neg), 1)  # a Python loop over ~2n thresholds: one run is plenty
    mine, (sb_eer, sb_threshold) = ours["result"], theirs["result"]
    return {
        "trials": n,
        "vpeval_median_wall_s": ours["median_wall_s"],
        "vpeval_median_cpu_s": ours["median_cpu_s"],
        "speechbrain_wall_s": theirs["median_wall_s"],
        "speechbrain_cpu_s": theirs["median_cpu_s"],
        "speedup_wall": theirs["median_wall_s"] / ours["median_wall_s"],
        "vpeval_eer": mine.eer,
        "speechbrain_eer": sb_eer,
        "abs_difference": abs(mine.eer - sb_eer),
        "vpeval_threshold": mine.threshold,
        "speechbrain_threshold": sb_threshold,
    }


def bootstrap(n: int, replicates: int) -> dict:
    from vpeval.plugins import get_plugin_manager

    s = synthetic_scores(n, speakers=500, seed=2, ids=True)
    s = Scores(s.scores, s.targets, None, s.enroll_speakers)  # pooled only: one replicate set per metric
    out = {"trials": n, "replicates": replicates, "speakers": 500}
    for name in ("eer-step", "min-cllr"):
        cls = get_plugin_manager().get("metric", name)
        metric = cls(cls.Params(bootstrap=replicates), PluginContext(seed=0))
        timing = clock(lambda m=metric: m.compute(MetricInputs(scores=s)), 1)
        r = timing.pop("result")[0]
        out[name] = {**timing, "value": r.value, "ci": [r.ci_low, r.ci_high]}
    return out


def cli(n: int, runs: int) -> dict:
    from vpeval.metrics_cli import run_metrics_on_scores
    from vpeval.scorefile import write_score_file

    folder = Path(tempfile.mkdtemp(prefix="vpeval-metrics-bench-"))
    try:
        path = folder / "scores.txt"
        write_score_file(path, synthetic_scores(n, speakers=1000, seed=3, ids=True))
        in_process = clock(lambda: run_metrics_on_scores(str(path), None, False, 0), runs)
        in_process.pop("result")
        out = {"trials": n, "file_mb": path.stat().st_size / 1e6, "in_process": in_process}
        exe = shutil.which("vpeval") or str(Path(sys.executable).with_name("vpeval"))
        if Path(exe).exists():
            command = clock(
                lambda: subprocess.run([exe, "metrics", "--scores", str(path)], check=True, capture_output=True), runs
            )
            command.pop("result")
            out["command"] = command
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000_000)
    parser.add_argument("--sb-trials", type=int, default=100_000)
    parser.add_argument("--cli-trials", type=int, default=1_000_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()

    report = {}
    report["ten_million"] = ten_million(args.trials, args.runs)
    r = report["ten_million"]
    print(
        f"{args.trials:,} trials: EER step+ROCCH, minDCF x2, Cllr, min Cllr: median "
        f"{r['all']['median_wall_s']:.2f} s wall, "
        f"{r['all']['median_cpu_s']:.2f} s CPU (sort + tally alone {r['sort_and_tally']['median_wall_s']:.2f} s)"
    )
    print("   values:", {k: round(v, 4) for k, v in r["all"].pop("result").items()})
    r["sort_and_tally"].pop("result")

    report["speechbrain"] = sb = speechbrain_agreement(args.sb_trials, args.runs)
    print(
        f"{args.sb_trials:,} trials: vpeval step EER {sb['vpeval_median_wall_s'] * 1e3:.1f} ms vs speechbrain EER "
        f"{sb['speechbrain_wall_s']:.1f} s "
        f"({sb['speedup_wall']:.0f}x); EER {sb['vpeval_eer']:.8f} vs {sb['speechbrain_eer']:.8f} "
        f"(|diff| {sb['abs_difference']:.1e}), "
        f"threshold {sb['vpeval_threshold']:.6f} vs {sb['speechbrain_threshold']:.6f}"
    )

    report["bootstrap"] = bs = bootstrap(args.sb_trials, args.replicates)
    for name in ("eer-step", "min-cllr"):
        print(
            f"bootstrap {args.replicates} replicates, {args.sb_trials:,} trials, {name}: "
            f"{bs[name]['median_wall_s']:.2f} s wall, "
            f"{bs[name]['median_cpu_s']:.2f} s CPU; {bs[name]['value']:.3f} "
            f"[{bs[name]['ci'][0]:.3f}, {bs[name]['ci'][1]:.3f}]"
        )

    report["cli"] = c = cli(args.cli_trials, args.runs)
    line = (
        f"metrics on a {args.cli_trials:,}-trial score file ({c['file_mb']:.0f} MB): in process "
        f"{c['in_process']['median_wall_s']:.2f} s wall, {c['in_process']['median_cpu_s']:.2f} s CPU"
    )
    if "command" in c:
        line += f"; `vpeval metrics --scores` command {c['command']['median_wall_s']:.2f} s wall"
    print(line)

    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=float))


if __name__ == "__main__":
    main()
