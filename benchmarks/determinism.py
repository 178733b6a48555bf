"""Which numerical kernels make numbers move between CPUs: fingerprints under each library's ISA switch.

Each probe computes something the demo computes, with the library kernels it uses, and prints a short
hash of the exact result bits:

- numpy-blas: float32/float64 matrix products and a solve (numpy's bundled OpenBLAS: PCA, LDA, PLDA);
- sklearn-kmeans: MiniBatchKMeans codebooks as fbank-rvq fits them (scipy's OpenBLAS, OpenMP);
- torch-forward / torch-train: an ECAPA-TDNN forward pass, and three AdamW steps of it (oneDNN
  convolutions, MKL matrix products, ATen's vectorised reductions);
- ct2-int8 / ct2-float32: Whisper tiny.en encoder output and greedy tokens (CTranslate2);
- mcadams: the McAdams transform (numpy + LAPACK eigenvalues).

The same probes then run in child processes, each with one switch set that pins a library to a
narrower instruction set (what another CPU would pick by itself), and with two threads. A hash that
changes under a switch names a kernel whose bits depend on the CPU it runs on.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/determinism.py [--probes torch-train,ct2-int8]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

SWITCHES = {
    "default": {},
    "torch ATen avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "oneDNN avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "MKL avx2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2", "MKL_CBWR": "AVX2"},
    "OpenBLAS Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "CTranslate2 avx2": {"CT2_FORCE_CPU_ISA": "AVX2"},
    "two threads": {"PROBE_THREADS": "2"},
}


def digest(*arrays) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:12]


def speech(seconds: float = 3.0, seed: int = 0):
    """A deterministic vowel-like signal (harmonics with a moving pitch) at 16 kHz."""
    import numpy as np

    t = np.arange(int(seconds * 16000)) / 16000
    f0 = 120 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / 16000
    x = sum(np.sin(k * phase) / k for k in range(1, 20)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    x += 0.01 * np.random.default_rng(seed).normal(size=len(t))
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def probe_numpy_blas(threads: int) -> str:
    import numpy as np

    rng = np.random.default_rng(0)
    a32, b32 = rng.normal(size=(300, 257)).astype(np.float32), rng.normal(size=(257, 190)).astype(np.float32)
    a64 = rng.normal(size=(200, 200))
    return digest(a32 @ b32, a64 @ a64.T, np.linalg.solve(a64 @ a64.T + np.eye(200), a64[:, 0]))


def probe_sklearn_kmeans(threads: int) -> str:
    import numpy as np

    from vpeval_cpu_frontends.quantizers import fit_codebook

    frames = np.random.default_rng(1).normal(size=(6000, 320)).astype(np.float32)
    return digest(fit_codebook(frames, 64, np.random.default_rng(2), "probe"))


def _ecapa():
    import torch

    from vpeval_asv.embedding import Embedder
    from vpeval_asv.models import ModelConfig

    torch.manual_seed(0)
    return Embedder(ModelConfig("ecapa", 80, (64, 64, 64, 64, 192), 96, 16000))


def probe_torch_forward(threads: int) -> str:
    embedder = _ecapa()
    return digest(embedder.embed_audio(speech()))


def probe_torch_train(threads: int) -> str:
    import numpy as np
    import torch

    embedder = _ecapa()
    model = embedder.model
    model.train()
    head = torch.nn.Linear(96, 4)
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-3)
    waves = torch.from_numpy(np.stack([speech(2.0, seed) for seed in range(8)]))
    labels = torch.tensor([0, 1, 2, 3] * 2)
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(head(model(embedder.features(waves)).reshape(8, -1)), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return digest(*[p.detach().numpy() for p in model.parameters()])


def _whisper(compute_type: str, threads: int) -> str:
    import numpy as np
    from faster_whisper import WhisperModel
    from faster_whisper.feature_extractor import FeatureExtractor

    from vpeval_speech.whisper_asr import packaged_model_path

    model = WhisperModel(str(packaged_model_path()), device="cpu", compute_type=compute_type, cpu_threads=threads)
    features = FeatureExtractor()(speech(5.0))[:, :3000]
    features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))[None].astype(np.float32)
    import ctranslate2

    encoded = model.model.encode(ctranslate2.StorageView.from_array(features))
    prompt = [model.hf_tokenizer.token_to_id(t) for t in ("<|startoftranscript|>", "<|notimestamps|>")]
    tokens = model.model.generate(encoded, [prompt], beam_size=1, max_length=40)[0].sequences_ids[0]
    return digest(np.array(encoded), np.array(tokens))


def probe_ct2_int8(threads: int) -> str:
    return _whisper("int8", threads)


def probe_ct2_float32(threads: int) -> str:
    return _whisper("float32", threads)


def probe_mcadams(threads: int) -> str:
    from vpeval_mcadams.transform import mcadams

    return digest(mcadams(speech(), 16000, 0.8))


PROBES = {name[len("probe_") :].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("probe_")}


def run_probes(names: list[str]) -> dict[str, str]:
    threads = int(os.environ.get("PROBE_THREADS", "1"))
    import torch

    torch.set_num_threads(threads)
    out = {}
    for name in names:
        try:
            out[name] = PROBES[name](threads)
        except Exception as error:  # a probe whose library is missing says so instead of failing the table
            out[name] = f"error: {type(error).__name__}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", default=",".join(PROBES), help="comma-separated: " + ", ".join(PROBES))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.probes.split(",")
    if args.child:
        print(json.dumps(run_probes(names)))
        return
    table = {}
    for label, env in SWITCHES.items():
        result = subprocess.run(
            [sys.executable, __file__, "--child", "--probes", ",".join(names)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        table[label] = json.loads(result.stdout.strip().splitlines()[-1])
    again = subprocess.run(
        [sys.executable, __file__, "--child", "--probes", ",".join(names)], capture_output=True, text=True, check=True
    )
    table["default, again"] = json.loads(again.stdout.strip().splitlines()[-1])
    base = table["default"]
    print(f"{'switch':18s} " + " ".join(f"{n:>14s}" for n in names))
    for label, row in table.items():
        cells = [row[n] if label == "default" else ("same" if row[n] == base[n] else "CHANGED") for n in names]
        print(f"{label:18s} " + " ".join(f"{c:>14s}" for c in cells))


if __name__ == "__main__":
    main()
