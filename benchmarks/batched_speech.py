"""One utterance at a time against masked length-bucketed batches, on the CPU at one thread (issue 39, item 2):
asv_ssl (WavLM layers + the two-stream ECAPA), the wav2vec2-CTC ASR (speechbrain-asr on an EncoderASR folder)
and the SER classifier (uar's speechbrain evaluator on a fold folder).

Random-weight models in the released layouts (vpeval_speech.tiny, vpeval_speechbrain.tiny), narrower and
shallower than the released ones but with their CNN geometry (seven blocks, 320-sample stride): --width and
--layers set the transformer (default 128 wide, 4 layers; the released models are 1024 x 24 and 768 x 12), so
the ratios here are those of small models, where per-call overheads weigh more than in the released ones.
Speech-like waveforms of 2-8 s. Each path runs one at a time, then batched, --runs times in turn (CPU seconds
of this process and wall seconds); the last lines give each path's ratios min / median / max and check that the
two ways agree (texts and classes exactly, embeddings to 1e-5).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/batched_speech.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from repeats import spread, timed  # benchmarks/repeats.py (scripts run as python benchmarks/<name>.py)
from speech_like import speech_like_set


def _wav2vec2_config(width: int, layers: int) -> dict:
    return {
        "hidden_size": width,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "intermediate_size": 4 * width,
        "conv_dim": (64,) * 7,
        "conv_kernel": (10, 3, 3, 3, 3, 2, 2),
        "conv_stride": (5, 2, 2, 2, 2, 2, 2),
        "num_conv_pos_embeddings": 32,
        "num_conv_pos_embedding_groups": 4,
    }


def _nothing():
    from contextlib import nullcontext

    return nullcontext()


def paths(root: Path, width: int, layers: int, batch: int) -> dict:
    """name -> (one at a time, batched): callables of the waveforms returning comparable outputs."""
    from vpeval.api import PluginContext
    from vpeval.build import plugin_context
    from vpeval_speech.speechbrain_asr import SpeechBrainASR
    from vpeval_speech.speechbrain_emotion import load_classifier
    from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder
    from vpeval_speechbrain.ssl import EcapaSsl, SslEmbedder, save_ssl_network
    from vpeval_speechbrain.tiny import write_tiny_wavlm

    config = _wav2vec2_config(width, layers)
    asr_folder = tiny_encoder_asr_folder(root / "asr-root", norm="layer", config=config)

    def asr(size: int) -> SpeechBrainASR:
        params = SpeechBrainASR.Params(source=str(asr_folder), cpu_batch_size=size)
        return SpeechBrainASR(params, PluginContext(work_dir=root / f"asr-{size}"))

    asr_alone, asr_batched = asr(1), asr(batch)
    ser = load_classifier(
        str(tiny_emotion_folders(root / "ser-root", 1, norm="group", config=config) / "fold_1"), None, ""
    )
    wavlm = write_tiny_wavlm(root / "wavlm", width=width, layers=layers, norm="layer")
    torch.manual_seed(1)
    save_ssl_network(EcapaSsl(80, [width] * 4 + [3 * width], layers).eval(), root / "asv_ssl")

    def ssl(size: int) -> SslEmbedder:
        frontend = plugin_context().get("frontend", "wavlm", {"model": str(wavlm), "layers": "all", "batch_size": size})
        return SslEmbedder(root / "asv_ssl", frontend)

    ssl_alone, ssl_batched = ssl(1), ssl(batch)
    return {
        "asv_ssl (WavLM + ECAPA)": (
            lambda waves: ssl_alone.embed_many(waves, waves),
            lambda waves: ssl_batched.embed_many(waves, waves),
        ),
        "ASR (wav2vec2 + CTC)": (
            lambda waves: [t.text for t in asr_alone.transcribe_many(waves)],
            lambda waves: [t.text for t in asr_batched.transcribe_many(waves)],
        ),
        "SER (wav2vec2 classifier)": (
            lambda waves: ser.classify_many(waves, "cpu", _nothing, batch_size=1),
            lambda waves: ser.classify_many(waves, "cpu", _nothing, batch_size=batch),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utterances", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    seconds, waves = speech_like_set(args.utterances, 2, 8)
    print(
        f"{args.utterances} utterances, {seconds.sum():.0f} s of speech; width {args.width}, {args.layers} layers, "
        f"batch {args.batch}; 1 torch thread; load average {os.getloadavg()[0]:.1f}"
    )
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (alone, batched) in paths(Path(tmp), args.width, args.layers, args.batch).items():
            alone(waves[:2]), batched(waves[:2])  # warm-up: loading, first calls
            ratios, walls, outputs = [], [], {}
            for run in range(args.runs):
                times = {}
                for way, call in (("alone", alone), ("batched", batched)):
                    outputs[way], cpu, wall = timed(call, waves)
                    times[way] = (cpu, wall)
                ratios.append(times["alone"][0] / times["batched"][0])
                walls.append(times["alone"][1] / times["batched"][1])
                print(
                    f"{name} run {run + 1}: one at a time {times['alone'][0]:.2f} s CPU "
                    f"({seconds.sum() / times['alone'][0]:.0f}x real time), batched {times['batched'][0]:.2f} s "
                    f"({seconds.sum() / times['batched'][0]:.0f}x), ratio {ratios[-1]:.2f} (wall {walls[-1]:.2f})"
                )
            a, b = outputs["alone"], outputs["batched"]
            if isinstance(a, np.ndarray):
                agreement = f"max |difference| {np.abs(a - b).max():.1e} (unit-length embeddings)"
            else:
                agreement = f"{sum(x == y for x, y in zip(a, b))} of {len(a)} equal"
            summary.append(f"{name}: CPU ratio {spread(ratios, ' / ')} (wall {spread(walls, ' / ')}), {agreement}")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
