"""How vpeval's stages scale with the corpus: 1x, 4x and 16x a 2500-utterance corpus (benchmarks/_corpus.py).

Each stage of each size runs in a process of its own (`--stage`), which reports the wall and CPU seconds
of its measured section (its own and its reaped workers' CPU time, from getrusage) and its peak RSS (the
largest of the process and its workers, ru_maxrss). Stages, each through the public plugin API
(vpeval.plugins.plugin_context) as the runner calls them:

    data       read the manifest (one header read per file: declared durations are checked), content
               fingerprint and bad-audio scan with an empty index; `data-indexed` again with the index
    plan       make_plan (split, pools, N = 1 VoicePrivacy trials and N = 5 sets) and the trial files
    anonymize  mcadams (VPC 2024 B2) on every utterance, written as wav, with the run's workers
    embed      ecapa 512/1536 (random weights: speed does not depend on them; --embed-network demo: the
               demo's 128/384) on every utterance through represent_many, with a content cache as in a run
    score      every distinct trial side represented and scored (vpeval.run.stage_score), by the ecapa
               attacker that embedded the utterances just before (outside the measured section)
    metrics    eer, min-dcf, cllr, min-cllr, linkability (with their speaker-level bootstrap intervals)
    report     results.json, results.csv, report.md, score files and the evaluation data folder

`--vpc` instead loads and plans a VoicePrivacy-sized layout from Kaldi folders alone (921 x 113 training
utterances, libri dev and test enrolls and trials with VPC-sized trial lists); every listed file is a
hard link to one 1.5 s wav, because the scan reads every file whole (see BENCHMARKS.md "Scale").

    OMP_NUM_THREADS=1 python benchmarks/scale.py [--root /tmp/vpeval-scale] [--sizes 1 4 16]
        [--heavy-sizes 1 4] [--runs 3] [--workers 2] [--embed-network vpc|demo] [--json out.json]
    OMP_NUM_THREADS=1 python benchmarks/scale.py --vpc [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
BASE_SPEAKERS, UTTERANCES_PER_SPEAKER = 100, 25  # 1x: 2500 utterances
CHEAP = ("data", "data-indexed", "plan", "score", "metrics", "report")  # repeated --runs times
# Minutes of CPU per size (an hour at 16x on this machine), run once and only at --heavy-sizes.
HEAVY = ("anonymize", "embed")
ORDER = ("data", "data-indexed", "plan", "anonymize", "embed", "score", "metrics", "report")
SMALL_ECAPA = {"channels": [32, 32, 32, 32, 96], "embedding_dim": 192}
# the embed stage's network (--embed-network): VoicePrivacy 2024's ECAPA, or the demo's (7x faster on a CPU)
EMBED_NETWORKS = {
    "vpc": ("ecapa-random", None),
    "demo": ("ecapa-demo-random", {"channels": [128, 128, 128, 128, 384], "embedding_dim": 192}),
}
METRICS = ("eer", "min-dcf", "cllr", "min-cllr", "linkability")


# -- the measured process ------------------------------------------------------------------------


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Section:
    """Wall and CPU seconds of the `with` block (CPU: this process and the workers it has reaped)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, _cpu() - self.cpu


def _peak_rss_mib() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return max(own.ru_maxrss, kids.ru_maxrss) / 1024  # KiB on Linux


def _work(root: Path, size: int) -> Path:
    return root / "work" / f"x{size}"


def _corpus(root: Path, size: int):
    from vpeval.data.manifest import read_manifest

    return read_manifest(root / "audio" / f"x{size}.csv", name=f"scale-x{size}")


def _plan_settings():
    from vpeval.settings import PlanSettings

    return PlanSettings(seed=0, enroll_utterances=[1, 5])


def _context(root: Path, size: int, workers: int, cache: Path | None = None):
    from vpeval.plugins import plugin_context

    options = {"cache_root": str(cache)} if cache is not None else {}
    return plugin_context(seed=0, work_dir=_work(root, size) / "plugins", workers=workers, threads=1, options=options)


def _ecapa(context, folder: Path, params: dict | None = None):
    """An ecapa attacker with random weights, by default at the VoicePrivacy size (512 channels, 1536 in MFA,
    192-d)."""
    import torch

    from vpeval_asv.checkpoint import save_model
    from vpeval_asv.models import build_embedding_model

    attacker = context.get("attacker", "ecapa", params or {})
    if not (folder / "config.json").is_file():
        torch.manual_seed(0)
        config = attacker.model_config
        save_model(folder, config, build_embedding_model(config))
    attacker.load(folder)
    return attacker


def stage_data(root: Path, size: int, indexed: bool, **_) -> dict:
    from vpeval.data.fingerprint import corpus_fingerprint
    from vpeval.data.scan import scan_corpus

    index = _work(root, size) / "fingerprints"
    if not indexed:
        shutil.rmtree(index, ignore_errors=True)
    with Section() as s:
        corpus = _corpus(root, size)
        corpus.fingerprint = corpus_fingerprint(corpus, index)
        corpus, skipped = scan_corpus(corpus, "fail", index)
    return {"wall": s.wall, "cpu": s.cpu, "items": len(corpus), "unit": "utterance"}


def stage_plan(root: Path, size: int, **_) -> dict:
    from vpeval.data.plan import make_plan, write_sides, write_trials

    corpus = _corpus(root, size)
    out = _work(root, size)
    with Section() as s:
        plan = make_plan(corpus, _plan_settings())
        for n, trial_list in plan.trial_lists.items():
            write_trials(trial_list, out / "trials" / f"N{n}.trials")
            write_sides(trial_list, out / "trials" / f"N{n}.sides")
    with open(out / "plan.pickle", "wb") as f:
        pickle.dump(plan, f)
    trials = sum(len(t) for t in plan.trial_lists.values())
    return {"wall": s.wall, "cpu": s.cpu, "items": len(corpus), "unit": "utterance", "trials": trials}


def stage_anonymize(root: Path, size: int, workers: int, **_) -> dict:
    import soundfile as sf

    from vpeval.api import Voice
    from vpeval.run.anonymize_task import voice_rng

    corpus = _corpus(root, size)
    out = _work(root, size) / "mcadams"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    context = _context(root, size, workers)
    anonymizer = context.get("anonymizer", "mcadams", {})

    def anonymize(u) -> float:
        audio = u.load()
        voice = Voice(key=u.id, level="utterance", rng=voice_rng(0, 0, u.id), utterance=u)
        sf.write(out / f"{u.id}.wav", anonymizer.anonymize(audio, u.sample_rate, voice), u.sample_rate, "PCM_16")
        return audio.size / u.sample_rate

    with Section() as s:
        seconds = sum(context.map(anonymize, corpus.utterances, "mcadams"))
    return {"wall": s.wall, "cpu": s.cpu, "items": len(corpus), "unit": "utterance", "audio_s": seconds}


def stage_embed(root: Path, size: int, workers: int, embed_network: str = "vpc", **_) -> dict:
    import numpy as np

    corpus = _corpus(root, size)
    cache = _work(root, size) / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    context = _context(root, size, workers, cache)
    folder, params = EMBED_NETWORKS[embed_network]
    attacker = _ecapa(context, root / folder, params)
    with Section() as s:
        vectors = attacker.represent_many([[u] for u in corpus.utterances])
    np.save(_work(root, size) / "embeddings.npy", vectors)
    audio = sum(u.duration for u in corpus.utterances)
    return {
        "wall": s.wall,
        "cpu": s.cpu,
        "items": len(corpus),
        "unit": "utterance",
        "audio_s": audio,
        "network": embed_network,
    }


def stage_score(root: Path, size: int, workers: int, **_) -> dict:
    """The runner's scoring (vpeval.run.trial_scoring): distinct sides represented once, then scored. The
    utterances are embedded first, outside the measured section, by a small ECAPA of the same embedding size (192) and
    the same attacker object (so the section finds them in its memory, as in a run after embedding):
    scoring's cost depends on the vectors' size only, and the full ECAPA would need an hour of CPU at 16x."""
    import numpy as np

    from vpeval.run.trial_scoring import represent_sides, trial_scores
    from vpeval.vector_table import VectorTable

    work = _work(root, size)
    with open(work / "plan.pickle", "rb") as f:
        plan = pickle.load(f)
    context = _context(root, size, workers, work / "cache-small")
    attacker = _ecapa(context, root / "ecapa-small-random", SMALL_ECAPA)
    # Outside the measured section: computes what the cache lacks (all of it the first time, or after a code
    # change retired the extractor's identity), else only reads it back.
    attacker.represent_many([[u] for u in plan.evaluation.utterances])
    corpus = plan.evaluation
    score_sets = []
    with Section() as s:
        remembered = VectorTable(np.float64)  # the runner's memo for one attacker on the original speech
        for n, trial_list in sorted(plan.trial_lists.items()):
            trials = trial_list.trials
            enroll = represent_sides(attacker, remembered, [t.enroll for t in trials], corpus)
            test = represent_sides(attacker, remembered, [t.test for t in trials], corpus)
            score_sets.append((n, trial_scores(trials, attacker.score(enroll, test))))
    with open(work / "scores.pickle", "wb") as f:
        pickle.dump(score_sets, f)
    trials = sum(len(sc) for _, sc in score_sets)
    return {"wall": s.wall, "cpu": s.cpu, "items": len(_corpus(root, size)), "unit": "utterance", "trials": trials}


def stage_metrics(root: Path, size: int, workers: int, **_) -> dict:
    from vpeval.api import MetricInputs

    work = _work(root, size)
    with open(work / "scores.pickle", "rb") as f:
        score_sets = pickle.load(f)
    context = _context(root, size, workers)
    plugins = [context.get("metric", name, {}) for name in METRICS]
    rows = []
    with Section() as s:
        for n, scores in score_sets:
            coords = {"anonymizer": "none", "attacker": "ecapa", "scenario": "original", "protocol": "O-O", "n": n}
            for plugin in plugins:
                for r in plugin.compute(MetricInputs(scores=scores, attributes=coords)):
                    rows.append(_row(coords, plugin.name, r))
    with open(work / "rows.pickle", "wb") as f:
        pickle.dump(rows, f)
    trials = sum(len(sc) for _, sc in score_sets)
    return {"wall": s.wall, "cpu": s.cpu, "items": len(_corpus(root, size)), "unit": "utterance", "trials": trials}


def _row(coords: dict, plugin: str, r) -> dict:
    """A results row as the runner writes it (vpeval.run.stage_metrics._row)."""
    import math

    def num(x):
        return None if x is None or math.isnan(float(x)) else float(x)

    return {
        **coords,
        "metric": r.metric,
        "metric_plugin": plugin,
        "gender": r.gender,
        "value": num(r.value),
        "ci_low": num(r.ci_low),
        "ci_high": num(r.ci_high),
        "unit": r.unit,
        "details": r.details,
    }


EXPERIMENT = """
name: scale-x{size}
seed: 0
data:
  corpus: {{use: manifest, params: {{path: {manifest}}}}}
attackers: [{{use: ecapa}}]
protocols: [O-O]
enroll_utterances: [1, 5]
metrics: [{metrics}]
"""


def stage_report(root: Path, size: int, **_) -> dict:
    from vpeval.config import load_experiment_text
    from vpeval.report.writer import write_outputs
    from vpeval.run.runner import RunResult, ScoreSet

    work = _work(root, size)
    with open(work / "plan.pickle", "rb") as f:
        plan = pickle.load(f)
    with open(work / "scores.pickle", "rb") as f:
        score_sets = [ScoreSet("none", "ecapa", "original", "O-O", n, sc) for n, sc in pickle.load(f)]
    with open(work / "rows.pickle", "rb") as f:
        rows = pickle.load(f)
    manifest = root / "audio" / f"x{size}.csv"
    exp = load_experiment_text(EXPERIMENT.format(size=size, manifest=manifest, metrics=", ".join(METRICS)))
    folder = work / "run"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with Section() as s:
        write_outputs(exp, RunResult(folder, rows), plan, score_sets)
    return {"wall": s.wall, "cpu": s.cpu, "items": len(_corpus(root, size)), "unit": "utterance"}


STAGES = {
    "data": lambda **kw: stage_data(indexed=False, **kw),
    "data-indexed": lambda **kw: stage_data(indexed=True, **kw),
    "plan": stage_plan,
    "anonymize": stage_anonymize,
    "embed": stage_embed,
    "score": stage_score,
    "metrics": stage_metrics,
    "report": stage_report,
}


# -- VoicePrivacy-sized layout from data folders alone --------------------------------------------------


VPC_TRAIN_SPEAKERS, VPC_TRAIN_UTTERANCES = 921, 113
# (set, enrollment speakers f/m, enrollment utterances per speaker, trial utterances per speaker): about
# libri_test (29 speakers: 438 enrollment, 1496 trial utterances) and libri_dev (40: 343, 1978), here 40
# speakers each; trials = every enrollment speaker against every trial utterance of its gender (VPC's
# lists are of that kind: 10-12 k trials per gender and set).
VPC_SETS = (("libri_dev", 20, 20, 9, 50), ("libri_test", 20, 20, 11, 37))


def build_vpc(root: Path) -> Path:
    """Kaldi folders of a VoicePrivacy-sized layout; every wav.scp entry a hard link to one short wav."""
    import numpy as np
    import soundfile as sf

    data = root / "vpc" / "data"
    if (data / "done").is_file():
        return data
    shutil.rmtree(root / "vpc", ignore_errors=True)
    audio = root / "vpc" / "wav"
    audio.mkdir(parents=True)
    rng = np.random.default_rng(0)
    noise = (0.1 * rng.normal(0, 1, 24000)).astype(np.float32)
    links = [0]

    def link(target: Path) -> None:
        # A new source file every 50 000 links: a file system allows about 65 000 links to one file.
        source = audio / f"source-{links[0] // 50_000}.wav"
        if not source.is_file():
            sf.write(source, noise, 16000, "PCM_16")
        os.link(source, target)
        links[0] += 1

    def folder(name: str, utts: list[tuple[str, str, str]], genders: dict[str, str], trials: list[str] | None = None):
        out = data / name
        out.mkdir(parents=True)
        for uid, _, _ in utts:
            link(audio / f"{uid}.wav")
        (out / "wav.scp").write_text("".join(f"{u} {audio / f'{u}.wav'}\n" for u, _, _ in utts))
        (out / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s, _ in utts))
        (out / "utt2dur").write_text("".join(f"{u} {d}\n" for u, _, d in utts))
        (out / "spk2gender").write_text("".join(f"{s} {g}\n" for s, g in sorted(genders.items())))
        if trials is not None:
            (out / "trials").write_text("".join(trials))

    train = [
        (f"t{s:04d}-{u:03d}", f"t{s:04d}", "1.5")
        for s in range(VPC_TRAIN_SPEAKERS)
        for u in range(VPC_TRAIN_UTTERANCES)
    ]
    folder("train_clean_360", train, {f"t{s:04d}": "fm"[s % 2] for s in range(VPC_TRAIN_SPEAKERS)})
    for name, females, males, enrolls, tests in VPC_SETS:
        genders = {f"{name}-f{s:02d}": "f" for s in range(females)} | {f"{name}-m{s:02d}": "m" for s in range(males)}
        folder(
            f"{name}_enrolls",
            [(f"{spk}-e{u:03d}", spk, "1.5") for spk in genders for u in range(enrolls)],
            genders,
        )
        for g in "fm":
            spks = [s for s in genders if genders[s] == g]
            utts = [(f"{spk}-t{u:03d}", spk, "1.5") for spk in spks for u in range(tests)]
            trials = [f"{e} {u} {'target' if e == s else 'nontarget'}\n" for e in spks for u, s, _ in utts]
            folder(f"{name}_trials_{g}", utts, {s: g for s in spks}, trials)
    (data / "done").write_text("")
    return data


VPC_EXPERIMENT = """
name: vpc-layout
seed: 0
data:
  corpus:
    use: kaldi
    params:
      root: {root}
      attacker_train: train_clean_360
      evaluation:
        - {{enrolls: libri_dev_enrolls, trials: [libri_dev_trials_f, libri_dev_trials_m]}}
        - {{enrolls: libri_test_enrolls, trials: [libri_test_trials_f, libri_test_trials_m]}}
attackers: [{{use: ecapa}}]
protocols: [O-O]
metrics: [eer]
"""


def stage_vpc(root: Path, indexed: bool, **_) -> dict:
    """The runner's data stage on the VPC layout: load, fingerprint, scan, then the predefined plan."""
    from vpeval.config import load_experiment_text
    from vpeval.data.fingerprint import corpus_fingerprint
    from vpeval.data.scan import scan_corpus

    data = build_vpc(root)
    cache = root / "vpc" / "cache"  # as in a run: the kaldi source fingerprints into the run cache's index
    index = cache / "fingerprints"
    if not indexed:
        shutil.rmtree(index, ignore_errors=True)
    exp = load_experiment_text(VPC_EXPERIMENT.format(root=data))
    context = _context(root, 0, 1, cache)
    source = context.get("corpus", "kaldi", exp.corpus.params)
    with Section() as load:  # the folders' files, one header read per utt2dur entry, the content fingerprint
        corpus = source.load()
    with Section() as check:  # as the runner's data stage
        if not corpus.fingerprint:
            corpus.fingerprint = corpus_fingerprint(corpus, index)
        corpus, _ = scan_corpus(corpus, "fail", index)
    with Section() as plan_time:
        plan = source.evaluation_plan(corpus, exp.plan_settings)
    trials = sum(len(t) for t in plan.trial_lists.values())
    return {
        "wall": load.wall + check.wall + plan_time.wall,
        "cpu": load.cpu + check.cpu + plan_time.cpu,
        "items": len(corpus),
        "unit": "utterance",
        "trials": trials,
        "parts": {
            "load": [load.wall, load.cpu],
            "scan": [check.wall, check.cpu],
            "plan": [plan_time.wall, plan_time.cpu],
        },
        "train_utterances": len(plan.train) + (len(plan.validation) if plan.validation else 0),
    }


# -- the driver --------------------------------------------------------------------------------------


def measure(stage: str, root: Path, size: int, workers: int, embed_network: str = "vpc") -> dict:
    """Run one stage in a fresh process; its JSON line plus its peak RSS."""
    command = [sys.executable, str(Path(__file__).resolve()), "--root", str(root), "--stage", stage]
    command += ["--size", str(size), "--workers", str(workers), "--embed-network", embed_network]
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE)
    if done.returncode != 0:
        raise SystemExit(f"stage {stage} x{size} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare(root: Path, sizes: list[int], workers: int, base_speakers: int = BASE_SPEAKERS) -> None:
    sys.path.insert(0, str(HERE))
    import _corpus

    started = time.perf_counter()
    rows = _corpus.generate(root / "audio", base_speakers * max(sizes), UTTERANCES_PER_SPEAKER, 0, workers)
    for size in sizes:
        _corpus.write_manifest(root / "audio" / f"x{size}.csv", rows[: base_speakers * size * UTTERANCES_PER_SPEAKER])
    hours = sum(float(r["duration_s"]) for r in rows) / 3600
    print(f"corpus: {len(rows)} utterances, {hours:.1f} h ({time.perf_counter() - started:.0f} s)", flush=True)


def table(results: list[dict]) -> str:
    lines = [
        "| size | utterances | stage | wall s | CPU s | peak RSS MiB | CPU ms / utterance | ratio to 1x | runs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = {r["stage"]: r["cpu"] / r["items"] for r in results if r["size"] == 1}
    for r in results:
        per = r["cpu"] / r["items"]
        ratio = f"{per / base[r['stage']]:.2f}" if r["stage"] in base else ""
        size = "VPC" if r["size"] == 0 else f"{r['size']}x"
        extra = f" ({r['trials']} trials)" if "trials" in r else ""
        lines.append(
            f"| {size} | {r['items']} | {r['stage']}{extra} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['rss']:.0f} | "
            f"{1000 * per:.3f} | {ratio} | {r['runs']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/vpeval-scale"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--heavy-sizes", type=int, nargs="*", default=[1, 4], help="sizes that run anonymize and embed")
    parser.add_argument("--stages", nargs="+", default=list(ORDER), choices=list(ORDER) + ["vpc", "vpc-indexed"])
    parser.add_argument("--runs", type=int, default=3, help="runs of each cheap stage (medians)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vpc", action="store_true", help="the VoicePrivacy-sized layout from data folders alone")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--embed-network", choices=sorted(EMBED_NETWORKS), default="vpc", help="ECAPA 512/1536 (vpc) or 128/384 (demo)"
    )
    parser.add_argument("--base-speakers", type=int, default=BASE_SPEAKERS, help="speakers at 1x (25 utterances each)")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # the measured child process
    parser.add_argument("--size", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.stage:
        import logging

        logging.basicConfig(level=logging.WARNING)
        if args.stage.startswith("vpc"):
            out = stage_vpc(root=args.root, indexed=args.stage == "vpc-indexed")
        else:
            out = STAGES[args.stage](
                root=args.root, size=args.size, workers=args.workers, embed_network=args.embed_network
            )
        out["rss"] = _peak_rss_mib()
        print(json.dumps(out))
        return

    results = []
    if args.vpc:
        plan = [("vpc", 0), ("vpc-indexed", 0)]
    else:
        prepare(args.root, args.sizes, args.workers, args.base_speakers)
        # embed before score (score reads its content cache); everything of one size before the next
        plan = [
            (stage, size)
            for size in args.sizes
            for stage in ORDER
            if stage in args.stages and (stage not in HEAVY or size in args.heavy_sizes)
        ]
    for stage, size in plan:
        runs = [measure(stage, args.root, size, args.workers, args.embed_network)]
        for _ in range(args.runs - 1 if stage in CHEAP or stage.startswith("vpc") else 0):
            runs.append(measure(stage, args.root, size, args.workers, args.embed_network))
        results.append(_median(stage, size, runs))
        print(table(results[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def _median(stage: str, size: int, runs: list[dict]) -> dict:
    out = dict(runs[0])
    for key in ("wall", "cpu", "rss"):
        out[key] = statistics.median(r[key] for r in runs)
    out.update(stage=stage, size=size, runs=len(runs))
    return out


if __name__ == "__main__":
    main()
