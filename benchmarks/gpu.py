"""Throughput of vpeval's torch models and anonymizers on one device: one table.

Rows:
- embedding throughput (x real time: seconds of speech per second) of ge2e (the packaged pretrained
  d-vector), ecapa 512/1536 (VoicePrivacy 2024's ASV), ecapa 1024/3072 (VPC 2026's size) and dast (both
  streams: Fbank + every layer of the packaged Whisper-base encoder, mid fusion) at batch sizes 1, 16, 64
  and 256. ecapa and dast have random weights (speed does not depend on them). Each is built through the
  plugin API (vpeval.plugins.plugin_context with the device and precision) and called through its batched
  hook (SpeakerEncoder.embed_batch, dast's Embedder.embed_batch); a plugin that does not override the hook
  runs the core's per-item default, marked "per-item" in the table;
- the ECAPA 512/1536 training step (Fbank, network, AAM-softmax head over 921 speakers, backward, AdamW)
  at batch 256 x 3 s crops, under the context's autocast;
- mcadams (VPC 2024 B2) and poolvc (WORLD + kNN) per CPU core, x real time.

Speech is generated (benchmarks/_corpus.py: 2-6 s speech-like utterances), in memory. Each cell is the
median of --runs timed passes after one warm-up pass. On a GPU the times include moving the audio to it
and the embeddings back (the plugins return numpy arrays).

    .venv/bin/python benchmarks/gpu.py --device cpu --quick     # under a minute on 2 CPU cores
    .venv/bin/python benchmarks/gpu.py --device cuda [--precision bf16]
    .venv/bin/python benchmarks/gpu.py --smoke [--released-only]   # every row's code path on the CPU, minutes

Released-model rows (issue 39): asv_orig's ECAPA 512/1536 folder through the `speechbrain` encoder (the
10,000 x real time goal is this row at batch 256 in bf16 on a GPU), asv_ssl's WavLM + ECAPA folder, and
the `wer` / `uar` metrics on VPC 2024's ASR (wav2vec2 large) and SER (wav2vec2 base) folder layouts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Spinning OpenMP threads slow torch down many times on a machine other jobs keep busy (README).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(HERE))

SAMPLE_RATE = 16000
VPC_TRAIN_SPEAKERS = 921


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _timed(fn, runs: int, device: str) -> tuple[float, float]:
    """Median (wall, process CPU) seconds of fn() over `runs` passes, after one warm-up pass. On a shared
    CPU the CPU seconds are the steadier measure (other jobs stretch the wall clock, not the work)."""
    fn()
    _sync(device)
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        _sync(device)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _rate(seconds: float, timing: tuple[float, float]) -> tuple[str, str]:
    """x real time per wall second and per CPU second."""
    wall, cpu = timing
    return f"{seconds / wall:,.1f}", f"{seconds / cpu:,.1f}" if cpu > 0 else "-"


def speech(count: int, seed: int = 0, seconds: float | None = None) -> list:
    """`count` speech-like utterances (float32, 16 kHz), or crops of `seconds` each."""
    import _corpus
    import numpy as np

    out = []
    for i in range(count):
        audio = _corpus.synthesize(_corpus.speaker_voice(seed, i % 16), np.random.default_rng([seed, i]))
        if seconds is not None:
            audio = np.resize(audio, int(seconds * SAMPLE_RATE))  # repeats a short one
        out.append(audio)
    return out


def _context(args, work: Path, threads: int | None = None):
    from vpeval.plugins import plugin_context

    return plugin_context(
        seed=0,
        work_dir=work,
        threads=threads or args.threads,
        device=args.device,
        precision=args.precision,
    )


def _ecapa_checkpoint(folder: Path, channels: tuple[int, ...]) -> Path:
    import torch

    from vpeval_asv.checkpoint import save_model
    from vpeval_asv.models import ModelConfig, build_embedding_model

    folder.mkdir(parents=True, exist_ok=True)
    config = ModelConfig("ecapa", 80, channels, 192)
    torch.manual_seed(0)
    save_model(folder, config, build_embedding_model(config))
    return folder


def embedders(args, work: Path) -> dict:
    """name -> (embed(list of audio) -> [B, D], batched?) for every model of the table."""
    from vpeval.api import SpeakerEncoder

    context = _context(args, work / "models")
    out = {}

    def encoder(name: str, params: dict):
        enc = context.get("encoder", name, params)
        enc.prepare()
        batched = type(enc).embed_batch is not SpeakerEncoder.embed_batch
        return enc.embed_batch, batched

    out["ge2e"] = lambda: encoder("ge2e", {})
    for label, channels in (("ecapa 512/1536", (512, 512, 512, 512, 1536)), ("ecapa 1024/3072", (1024,) * 4 + (3072,))):
        out[label] = lambda channels=channels, label=label: encoder(
            "ecapa", {"checkpoint": str(_ecapa_checkpoint(work / label.replace(" ", "-").replace("/", "-"), channels))}
        )

    def dast():
        attacker = context.get("attacker", "dast", {"fusion": "mid", "stages": ["I"]})
        # Random weights without training: the attacker's own network builder (what train() starts from).
        attacker._embedder = attacker._new_embedder()
        embedder = attacker.embedder
        if hasattr(embedder, "embed_batch"):
            return (lambda audios: embedder.embed_batch(audios, [None] * len(audios))), True
        return (lambda audios: [embedder.embed_audio(a) for a in audios]), False

    out["dast (mid, whisper-base)"] = dast
    return out


def embedding_rows(args, work: Path) -> list[list[str]]:
    rows = []
    pool = speech(args.utterances, seed=1)
    # Similar lengths per batch, as the plugins' length buckets give them: sorted by length.
    pool.sort(key=len)
    for name, build in embedders(args, work).items():
        try:
            embed, batched = build()
        except Exception as exc:  # a model this machine cannot build (missing package): say so, go on
            rows.append([name, "-", "not built: " + _reason(exc), "", "", ""])
            continue
        for batch in args.batch_sizes:
            used = _gpu_used(args.device)
            try:
                batches = [pool[i : i + batch] for i in range(0, len(pool), batch)]
                seconds = sum(a.size for a in pool) / SAMPLE_RATE
                timing = _timed(
                    lambda batches=batches, embed=embed: [embed(b) for b in batches], args.runs, args.device
                )
                path = "batched" if batched else "per-item"
                rows.append([f"{name} embedding", str(batch), *_rate(seconds, timing), path, used()])
            except Exception as exc:
                rows.append([f"{name} embedding", str(batch), "failed: " + _reason(exc), "", "", ""])
    return rows


def released_rows(args, work: Path) -> list[list[str]]:
    """The paths VoicePrivacy's released models take (issue 39), each through the plugin that reads its folder:
    asv_orig's ECAPA 512/1536 folder (the `speechbrain` encoder: packed batches, padded where a folder does
    not pack), asv_ssl's WavLM + ECAPA (VPC 2026; a tiny WavLM: the path, not the released size), and the `wer`
    (speechbrain-asr EncoderASR) and `uar` (speechbrain SER folds) metrics on a small VPC tree with the released
    ASR's and SER's wav2vec2 sizes (large 24 x 1024, base 12 x 768; --smoke: the tests' 2 x 32). Random weights
    (benchmarks/vpc_toolkit.py writes the folders in the toolkit's layout)."""
    import vpc_toolkit

    rows = []
    context = _context(args, work / "released")
    pool = sorted(speech(args.utterances, seed=4), key=len)
    seconds = sum(a.size for a in pool) / SAMPLE_RATE
    try:
        folder = vpc_toolkit.released_ecapa_folder(work / "asv_orig" / "CKPT+1")
    except Exception as exc:
        return [["asv_orig ECAPA 512/1536 folder", "-", "not built: " + _reason(exc), "", "", ""]]
    for batch in args.batch_sizes:
        used = _gpu_used(args.device)
        try:
            encoder = context.get("encoder", "speechbrain", {"source": str(folder), "batch_size": batch})
            encoder.prepare()
            timing = _timed(lambda encoder=encoder: encoder.embed_batch(pool), args.runs, args.device)
            path = "packed" if encoder.folder.prepare().packs else "padded"
            name = "asv_orig ECAPA 512/1536, VPC 2024 folder (speechbrain encoder) embedding"
            rows.append([name, str(batch), *_rate(seconds, timing), path, used()])
        except Exception as exc:
            rows.append(["asv_orig ECAPA 512/1536 embedding", str(batch), "failed: " + _reason(exc), "", "", ""])
    rows.append(_asv_ssl_row(args, work, context, pool, seconds))
    rows += _utility_rows(args, work)
    return rows


def _asv_ssl_row(args, work: Path, context, pool: list, seconds: float) -> list[str]:
    name = "asv_ssl WavLM (tiny 3 x 16) + ECAPA, VPC 2026 folder (speechbrain encoder) embedding"
    try:
        from vpeval_speechbrain.tiny import write_asv_ssl_folder

        folder, wavlm = write_asv_ssl_folder(work / "asv_ssl", work / "wavlm")
        encoder = context.get("encoder", "speechbrain", {"source": str(folder), "ssl_model": str(wavlm)})
        encoder.prepare()
        used = _gpu_used(args.device)
        timing = _timed(lambda: encoder.embed_batch(pool), args.runs, args.device)
        return [name, "-", *_rate(seconds, timing), "per utterance", used()]
    except Exception as exc:
        return [name, "-", "failed: " + _reason(exc), "", "", ""]


def _utility_rows(args, work: Path) -> list[list[str]]:
    """WER and UAR over the tree's original and anonymized sets, each pass on a fresh work folder (every file
    transcribed / classified again; the models are built again where the plugin does not keep them)."""
    import soundfile as sf
    import vpc_toolkit

    from vpeval.api import MetricInputs
    from vpeval.data.kaldi import read_data_dir
    from vpeval.types import Corpus

    size, ser_size = ("tiny", "tiny") if args.smoke else ("large", "base")
    try:
        tree = vpc_toolkit.make_utility_tree(work / "utility", size, ser_size)
    except Exception as exc:
        return [["wer / uar (VPC 2024 ASR and SER folders)", "-", "not built: " + _reason(exc), "", "", ""]]
    data, suffix = tree["data"], "_fast"

    def joined(names: list[str]) -> Corpus:
        corpora = [read_data_dir(data / n) for n in names]
        genders = {k: v for c in corpora for k, v in c.speaker_gender.items()}
        return Corpus(names[0], [u for c in corpora for u in c.utterances], genders)

    rows = []
    for metric, sets, params, label in (
        ("wer", vpc_toolkit.ASR_SETS, {"asr": "speechbrain-asr", "asr_params": {"source": str(tree["asr"])},
         "normaliser": "vpc2024", "bootstrap": 0}, f"wer: speechbrain-asr EncoderASR, wav2vec2 {size}"),
        ("uar", vpc_toolkit.SER_SETS, {"evaluator": "speechbrain", "models": str(tree["ser"]), "bootstrap": 0},
         f"uar: speechbrain SER folds, wav2vec2 {ser_size}"),
    ):  # fmt: skip
        inputs = MetricInputs(original=joined(sets), anonymized=joined([s + suffix for s in sets]))
        audio = sum(sf.info(u.path).duration for c in (inputs.original, inputs.anonymized) for u in c.utterances)
        if metric == "wer":
            params["sets"] = [str(data / s) for s in sets]
        else:
            params["spk2fold"] = [str(data / s / "spk2fold") for s in sets]
        passes = iter(range(1000))

        def compute(metric=metric, params=params, inputs=inputs, passes=passes):
            context = _context(args, work / f"{metric}-{next(passes)}")
            context.get("metric", metric, params).compute(inputs)

        used = _gpu_used(args.device)
        try:
            rows.append([label, "-", *_rate(audio, _timed(compute, args.runs, args.device)), "metric", used()])
        except Exception as exc:
            rows.append([label, "-", "failed: " + _reason(exc), "", "", ""])
    return rows


def _gpu_used(device: str):
    """A function telling, after the work, whether anything was allocated on the GPU (the plugin used it)."""
    if not device.startswith("cuda"):
        return lambda: "cpu"
    import torch

    torch.cuda.reset_peak_memory_stats()
    return lambda: (
        f"GPU, {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB peak"
        if torch.cuda.max_memory_allocated()
        else "not on GPU"
    )


def training_row(args, work: Path) -> list[str]:
    import numpy as np
    import torch

    from vpeval_asv.models import ModelConfig, SpeakerClassifier, build_embedding_model
    from vpeval_torch.fbank import FbankFeatures

    context = _context(args, work / "train")
    context.apply_threads()
    batch = args.train_batch
    device = context.device
    try:
        config = ModelConfig("ecapa", 80, (512, 512, 512, 512, 1536), 192)
        torch.manual_seed(0)
        model = build_embedding_model(config).to(device)
        features = FbankFeatures(80).to(device)
        head = SpeakerClassifier("aam", 192, VPC_TRAIN_SPEAKERS, 0.2, 30.0).to(device)
        optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-3)
        crops = torch.from_numpy(np.stack(speech(batch, seed=2, seconds=3.0)))
        labels = torch.randint(0, VPC_TRAIN_SPEAKERS, (batch,))
        model.train()
        head.train()

        def step():
            waves, targets = crops.to(device, non_blocking=True), labels.to(device)
            with context.autocast():
                loss = head(model(features(waves)), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        used = _gpu_used(args.device)
        wall, cpu = _timed(step, args.runs, args.device)
        steps = 104_000 * 3.5 / batch  # about 3.5 crops of 3 s per train-clean-360 utterance (363 h)
        return [
            f"ecapa 512/1536 training step, {batch} x 3 s (s per step; min per train-clean-360 epoch)",
            str(batch),
            f"{wall:.3f} s; {wall * steps / 60:,.0f} min",
            f"{cpu:.3f} CPU s; {cpu * steps / 60:,.0f} min",
            "",
            used(),
        ]
    except Exception as exc:
        return ["ecapa 512/1536 training step", str(batch), "failed: " + _reason(exc), "", "", ""]


def anonymizer_rows(args, work: Path) -> list[list[str]]:
    from vpeval.api import Voice
    from vpeval.run.anonymize_task import voice_rng

    rows = []
    audios = speech(args.anonymize_utterances, seed=3)
    seconds = sum(a.size for a in audios) / SAMPLE_RATE
    context = _context(args, work / "anonymizers", threads=1)
    context.apply_threads()

    def poolvc():
        from vpeval_poolvc.bench import make_benchmark_anonymizer  # a 4-speaker generated pool

        return make_benchmark_anonymizer(context)

    for name, build in (("mcadams", lambda: context.get("anonymizer", "mcadams", {})), ("poolvc", poolvc)):
        try:
            anonymizer = build()
            anonymizer.prepare()

            def run(anonymizer=anonymizer):
                for i, a in enumerate(audios):
                    voice = Voice(key=f"u{i}", level="utterance", rng=voice_rng(0, 0, f"u{i}"))
                    anonymizer.anonymize(a, SAMPLE_RATE, voice)

            timing = _timed(run, max(1, args.runs), "cpu")
            rows.append([f"{name} anonymization", "1 core", *_rate(seconds, timing), "", "cpu"])
        except Exception as exc:
            rows.append([f"{name} anonymization", "1 core", "failed: " + _reason(exc), "", "", ""])
    return rows


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument(
        "--quick", action="store_true", help="4 utterances per cell, batch sizes 1 and 4, training batch 4"
    )
    parser.add_argument("--runs", type=int, default=None, help="timed passes per cell (median); default 3, quick 1")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: 1 on the CPU, per core; else all cores)"
    )
    parser.add_argument("--verbose", action="store_true", help="print tracebacks of failed rows")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="--quick on the CPU, tiny wav2vec2 for WER / UAR: the rows run",
    )
    parser.add_argument("--released-only", action="store_true", help="only the VoicePrivacy released-model rows")
    args = parser.parse_args()
    if args.smoke:
        args.device, args.quick = "cpu", True
    if args.device == "cpu" and args.precision != "fp32":
        print(f"precision {args.precision} asked on the CPU: vpeval runs fp32 there (the table is fp32)")
        args.precision = "fp32"
    args.threads = args.threads or (1 if args.device == "cpu" else os.cpu_count() or 1)
    args.runs = args.runs or (1 if args.quick else 3)
    args.batch_sizes = [1, 4] if args.quick else [1, 16, 64, 256]
    args.utterances = 4 if args.quick else 512
    args.train_batch = 4 if args.quick else 256
    args.anonymize_utterances = 1 if args.quick else 8

    import logging

    import torch

    logging.basicConfig(level=logging.WARNING)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: torch sees no CUDA device on this machine; use --device cpu.")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vpeval-gpu-bench-") as tmp:
        work = Path(tmp)
        try:
            rows = released_rows(args, work)
            if not args.released_only:
                rows = embedding_rows(args, work) + rows + [training_row(args, work)] + anonymizer_rows(args, work)
        except Exception:
            traceback.print_exc()
            raise
    where = (
        torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else f"CPU, {args.threads} threads"
    )
    print()
    print(
        f"device {args.device} ({where}), precision {args.precision}, torch {torch.__version__}"
        + (
            f"; quick: {args.utterances} utterances per embedding cell, batch sizes {args.batch_sizes}, training "
            f"batch {args.train_batch} (not 256)"
            if args.quick
            else f"; {args.utterances} utterances (2-6 s) per embedding cell"
        )
    )
    print()
    print("| what | batch | x real time (wall) | x real time (per CPU s of this process) | path | where it ran |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
