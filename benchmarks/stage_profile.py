"""Where the demo's CPU goes inside each expensive stage: process CPU time on one thread, per step.

Machine load barely moves process CPU time (wall clock does), so this is how stage costs are compared
on the shared machine. Give it some demo speech (the synth corpus of a run's cache), e.g.

    OMP_NUM_THREADS=1 python benchmarks/stage_profile.py --audio "$VPEVAL_CACHE/work/corpus-synth/synth-*/audio/*/*.wav"

Rows: ms of CPU per second of audio (ECAPA training: per batch of the demo's 32 crops of 2 s).
"""

from __future__ import annotations

import argparse
import glob
import os
import time
from collections import defaultdict

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

RATE = 16000


class Steps:
    """Accumulates CPU seconds per named step."""

    def __init__(self):
        self.cpu: dict[str, float] = defaultdict(float)

    def __call__(self, name, fn, *args, **kwargs):
        start = time.process_time()
        out = fn(*args, **kwargs)
        self.cpu[name] += time.process_time() - start
        return out

    def report(self, stage: str, seconds: float, unit: str = "ms per s of audio") -> None:
        total = sum(self.cpu.values())
        rate = f", {seconds / total:.0f} x real time" if unit.startswith("ms per s") else ""
        print(f"\n{stage}: {1000 * total / seconds:.1f} {unit}{rate}")
        for name, cpu in self.cpu.items():
            print(f"  {name:28s} {1000 * cpu / seconds:8.2f}  {100 * cpu / total:5.1f} %")


def poolvc(audios, seconds) -> None:
    from vpeval_poolvc.anonymizer import convert_f0
    from vpeval_world.matching import envelope_cepstra, knn_indices, mean_normalised
    from vpeval_world.vocoder import WorldFeatures, _pyworld, synthesize

    pw, t = _pyworld(), Steps()
    # A pool speaker of the demo's size (about 19 s, 3900 frames) from the first utterances.
    pool = np.concatenate(audios[:4])
    f0, times = pw.dio(pool, RATE, frame_period=5.0)
    pool_sp = pw.cheaptrick(pool, pw.stonemask(pool, f0, times, RATE), times, RATE)
    keys, log_sp = mean_normalised(envelope_cepstra(pool_sp, RATE)), np.log(pool_sp + 1e-12).astype(np.float32)
    for x in audios:
        f0, times = t("WORLD dio", pw.dio, x, RATE, frame_period=5.0)
        f0 = t("WORLD stonemask", pw.stonemask, x, f0, times, RATE)
        sp = t("WORLD cheaptrick", pw.cheaptrick, x, f0, times, RATE)
        ap = t("WORLD d4c", pw.d4c, x, f0, times, RATE, threshold=-1.0)
        query = t("cepstra", lambda sp=sp: mean_normalised(envelope_cepstra(sp, RATE)))
        idx = t("kNN search", knn_indices, query, keys, 4)
        env = t("kNN average, rescale", lambda idx=idx: np.exp(log_sp[idx].mean(axis=1).astype(np.float64)))
        t("WORLD synthesis", synthesize, WorldFeatures(convert_f0(f0, 5.0, 0.1), env, ap), RATE, len(x))
    t.report("poolvc (conversion; pool analysis not counted)", seconds)


def ge2e(audios, seconds) -> None:
    from vpeval_ge2e.encoder import load_voice_encoder
    from vpeval_ge2e.preprocess import preprocess

    encoder, t = load_voice_encoder(), Steps()
    encoder.embed_utterance(preprocess(audios[0]))
    for x in audios:
        wav = t("volume + webrtcvad", preprocess, x)
        t("mel + LSTM (resemblyzer)", encoder.embed_utterance, wav, rate=1.3, min_coverage=0.75)
    t.report("GE2E embedding", seconds)


def ecapa(audios, seconds) -> None:
    import torch

    from vpeval_asv.embedding import Embedder
    from vpeval_asv.models import ModelConfig, SpeakerClassifier, build_embedding_model

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = ModelConfig("ecapa", 80, (128, 128, 128, 128, 384), 192)  # the demo's ecapa-small
    embedder, t = Embedder(config, build_embedding_model(config)), Steps()
    for x in audios:
        t("embedding (fbank + forward)", embedder.embed_audio, x.astype(np.float32))
    t.report("ECAPA embedding (demo size)", seconds)

    model, t = embedder.model, Steps()
    classifier = SpeakerClassifier("aam", 192, 18, 0.2, 30.0)
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(classifier.parameters()), lr=0.002)
    rng = np.random.default_rng(0)
    crops = [x[s : s + 2 * RATE] for x in audios if len(x) > 2 * RATE for s in [int(rng.integers(len(x) - 2 * RATE))]]
    batch = torch.from_numpy(np.stack((crops * 32)[:32]).astype(np.float32))
    labels = torch.arange(32) % 18
    model.train()
    batches = 6
    for _ in range(batches):
        feats = t("fbank", embedder.features, batch)
        loss = t("forward + loss", lambda feats=feats: classifier(model(feats), labels))
        t("backward", lambda loss=loss: (optimizer.zero_grad(), loss.backward()))
        t("AdamW step", optimizer.step)
    t.report("ECAPA training (demo size)", batches, "ms per batch of 32 x 2 s")


def uar(audios, seconds) -> None:
    import parselmouth
    from parselmouth.praat import call

    from vpeval_prosody import FIRST_PASS, TIME_STEP, pitch_floor_ceiling

    t = Steps()
    for x in audios:
        sound = parselmouth.Sound(x, sampling_frequency=float(RATE))
        t(
            "pitch, first pass",
            sound.to_pitch,
            time_step=TIME_STEP,
            pitch_floor=FIRST_PASS[0],
            pitch_ceiling=FIRST_PASS[1],
        )
        floor, ceiling = pitch_floor_ceiling(sound)  # repeats the first pass: not counted
        t("pitch, second pass", sound.to_pitch, time_step=TIME_STEP, pitch_floor=floor, pitch_ceiling=ceiling)
        t("intensity", sound.to_intensity, minimum_pitch=floor, time_step=TIME_STEP)
        t("LTAS", call, sound, "To Ltas", 100)
        t("harmonicity (cc)", sound.to_harmonicity_cc, TIME_STEP, floor, 0.1, 1.0)
    t.report("UAR Praat prosodic features", seconds)


def wer(audios, seconds) -> None:
    from vpeval_speech.whisper_asr import load_model, packaged_model_path

    model, t = load_model(str(packaged_model_path()), "cpu", "int8", 1, 1), Steps()
    for x in audios:
        t(
            "whisper tiny.en, beam 5",
            lambda x=x: list(
                model.transcribe(
                    x.astype(np.float32),
                    language="en",
                    beam_size=5,
                    word_timestamps=True,
                    temperature=[0.0],
                    no_repeat_ngram_size=3,
                    condition_on_previous_text=False,
                )[0]
            ),
        )
    t.report("WER transcription", seconds)


STAGES = {"poolvc": poolvc, "ge2e": ge2e, "ecapa": ecapa, "uar": uar, "wer": wer}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audio", required=True, help="glob of 16 kHz wav files (demo speech)")
    parser.add_argument("--files", type=int, default=20, help="how many of them (spread over the list)")
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    args = parser.parse_args()
    paths = sorted(glob.glob(args.audio))
    if not paths:
        raise SystemExit(f"no files match {args.audio}")
    paths = paths[:: max(1, len(paths) // args.files)][: args.files]
    audios = [sf.read(p, dtype="float64")[0] for p in paths]
    seconds = sum(len(a) for a in audios) / RATE
    print(f"{len(audios)} files, {seconds:.0f} s of audio, one thread, process CPU time")
    for stage in args.stages:
        STAGES[stage](audios, seconds)


if __name__ == "__main__":
    main()
