"""Where the speaker information sits in a frontend's output: linear probes from a slice of it to the
target encoder's embedding (docs/results/spinv.md, "Why SpInv loses").

For each frontend, every utterance's `--seconds` slice (the attack's observation, start seeded by the
utterance id as in SpInv's attack) is pooled into fixed vectors:
  tokens      per-codebook token histograms (normalised counts)
  features    mean and standard deviation over frames of the raw continuous features
  features-ln the same after a per-frame LayerNorm without gain (what AuB's `feature_norm` feeds on)
  features-cs the same after a per-channel standardisation with training-set statistics
A ridge regression (alpha chosen by RidgeCV on the training speakers) maps each to the target
encoder's embedding z; on held-out speakers the script prints CosSim(ẑ, z) (eq. 14), the same for the
constant predictor (the training mean of z), and the inversion EER (ẑ_i against z_j, i != j).
If a linear map recovers z from a representation, the information is there for G to learn.
Beside it, the same-space check token-probe relies on: LDA fitted on the training speakers, then the
EER of cosine scores between held-out utterances (every pair of different utterances): speaker
information that separates speakers in the frontend's own space, whether or not it maps onto z.
`--seconds 0` pools whole utterances instead of slices.

    OMP_NUM_THREADS=1 python benchmarks/spinv_probe.py --ecapa <folder with embedding_model.pt>
        [--speakers 60] [--utterances 8] [--train-speakers 40] [--seconds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from vpeval.plugins import plugin_context
from vpeval_scoring.inversion import cos_sim, unit_rows

FRONTENDS = {
    "fbank-rvq": {"frame_rate": 12.5},
    "kimi-like": {"model": "whisper-tiny.en"},
}


def slice_of(output, seconds: float, utterance_id: str, context):
    from vpeval_spinv.views import slice_output

    return slice_output(output, seconds, context.rng("spinv-slice", utterance_id))


def pooled(outputs, train_rows: np.ndarray) -> dict[str, np.ndarray]:
    """Fixed-size vectors per utterance from its sliced frontend output."""
    reps: dict[str, list[np.ndarray]] = {"tokens": [], "features": [], "features-ln": []}
    for out in outputs:
        if out.tokens is not None:
            hist = [
                np.bincount(out.tokens[:, q], minlength=size) / len(out.tokens)
                for q, size in enumerate(out.codebook_sizes)
            ]
            reps["tokens"].append(np.concatenate(hist))
        f = out.features.astype(np.float64)
        reps["features"].append(np.concatenate([f.mean(0), f.std(0)]))
        ln = (f - f.mean(1, keepdims=True)) / np.sqrt(f.var(1, keepdims=True) + 1e-5)
        reps["features-ln"].append(np.concatenate([ln.mean(0), ln.std(0)]))
    train_frames = np.concatenate([outputs[i].features for i in np.flatnonzero(train_rows)]).astype(np.float64)
    mu, sd = train_frames.mean(0), train_frames.std(0) + 1e-6
    reps["features-cs"] = [
        np.concatenate([((o.features - mu) / sd).mean(0), ((o.features - mu) / sd).std(0)]) for o in outputs
    ]
    return {name: np.stack(rows) for name, rows in reps.items() if rows}


def inversion_eer(recovered: np.ndarray, targets: np.ndarray, speakers: np.ndarray) -> float:
    """The `inversion` metric's EER: every ẑ_i against every other utterance's z_j."""
    from vpeval.stats import eer
    from vpeval_scoring.inversion import verification_trials

    return float(eer(*verification_trials(recovered, targets, speakers)) * 100)


def same_space_eer(x: np.ndarray, train: np.ndarray, speakers: np.ndarray) -> float:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.preprocessing import StandardScaler

    from vpeval.stats import eer

    scaler = StandardScaler().fit(x[train])
    lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(scaler.transform(x[train]), speakers[train])
    y = unit_rows(lda.transform(scaler.transform(x[~train])))
    scores = y @ y.T
    same = speakers[~train][:, None] == speakers[~train][None, :]
    upper = np.triu(np.ones(same.shape, dtype=bool), k=1)
    return float(eer(scores[upper], same[upper]) * 100)


def probe(name: str, reps: dict[str, np.ndarray], z: np.ndarray, train: np.ndarray, speakers: np.ndarray) -> list[dict]:
    from sklearn.linear_model import RidgeCV
    from sklearn.preprocessing import StandardScaler

    test = ~train
    constant = np.repeat(z[train].mean(0, keepdims=True), test.sum(), axis=0)
    rows = [
        {
            "frontend": name,
            "representation": "constant (training mean of z)",
            "cossim": cos_sim(constant, z[test]),
            "inversion_eer": 50.0,
        }
    ]
    for rep, x in reps.items():
        scaler = StandardScaler().fit(x[train])
        model = RidgeCV(alphas=np.logspace(-2, 4, 13)).fit(scaler.transform(x[train]), z[train])
        zhat = model.predict(scaler.transform(x[test]))
        rows.append(
            {
                "frontend": name,
                "representation": rep,
                "dims": int(x.shape[1]),
                "alpha": float(model.alpha_),
                "cossim": cos_sim(zhat, z[test]),
                "inversion_eer": inversion_eer(zhat, z[test], speakers[test]),
                "same_space_eer": same_space_eer(x, train, speakers),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--ecapa", required=True, help="folder of a trained ECAPA (embedding_model.pt), the target space"
    )
    parser.add_argument("--speakers", type=int, default=60)
    parser.add_argument("--utterances", type=int, default=8)
    parser.add_argument("--train-speakers", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--frontends", default="fbank-rvq,kimi-like")
    parser.add_argument("--work", default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="spinv-probe-"))
    context = plugin_context(seed=0, work_dir=work, threads=1)
    corpus = context.get(
        "corpus",
        "synth",
        {
            "preset": "large",
            "speakers": args.speakers,
            "utterances": args.utterances,
            "min_seconds": 4.0,
            "max_seconds": 12.0,
        },
    ).load()
    utterances = corpus.utterances
    speakers = np.array([u.speaker for u in utterances])
    train_speakers = set(corpus.speakers[: args.train_speakers])
    train = np.array([s in train_speakers for s in speakers])
    encoder = context.get("encoder", "ecapa", {"checkpoint": args.ecapa})
    z = np.stack([encoder.embed(u.load(encoder.sample_rate)) for u in utterances]).astype(np.float64)

    rows = []
    for name in args.frontends.split(","):
        frontend = context.get("frontend", name, FRONTENDS[name])
        frontend.fit(corpus.with_speakers(sorted(train_speakers)))
        outputs = [frontend.encode(u.load(frontend.sample_rate)) for u in utterances]
        if args.seconds > 0:
            outputs = [slice_of(o, args.seconds, u.id, context) for o, u in zip(outputs, utterances)]
        rows += probe(name, pooled(outputs, train), z, train, speakers)
    for row in rows:
        same = f"  same-space LDA EER {row['same_space_eer']:5.1f} %" if "same_space_eer" in row else ""
        print(
            f"{row['frontend']:10s} {row['representation']:30s} CosSim {row['cossim']:.3f}  inversion EER "
            f"{row['inversion_eer']:5.1f} %{same}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
