"""Seed 003's Table 6 in embedding space: original / + OHNN / + OHNN + EC (and + selection).

    python -m vpeval_embedding_anonymizers.table6                       # synthetic embeddings
    python -m vpeval_embedding_anonymizers.table6 --corpus synth --preset emotion --encoder ge2e \\
        --alpha-reference-norm 35 --split speaker

With a corpus, its speakers are split in halves: the first half is the pool (OHNN training, SVMs and
the emotion indicator), the second half is evaluated, so pool and evaluation speakers are disjoint.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from vpeval.api import PluginContext, Voice
from vpeval.plugins import plugin_context
from vpeval_embedding_anonymizers.evaluation import embedding_space_table, format_table


def alpha_units(args) -> dict:
    """Emotion compensation's alpha settings: relative to --alpha-reference-norm when given, else absolute."""
    if args.alpha_reference_norm is None:
        return {"alpha_units": "absolute"}
    return {"alpha_units": "relative", "alpha_reference_norm": args.alpha_reference_norm}


def corpus_split(context: PluginContext, name: str, preset: str, encoder: str, work: Path):
    """(pool file, pool manifest, evaluation vectors, speakers, emotions, utterances)."""
    from vpeval.speakers import CorpusSpec, EncoderSpec, embed_corpus

    spec = CorpusSpec(use=name, params={"preset": preset})
    vectors = embed_corpus(context, spec, EncoderSpec(use=encoder))
    utts = context.get("corpus", name, {"preset": preset}).load().utterances
    ids = sorted(set(vectors.speakers.tolist()))
    in_pool = np.isin(vectors.speakers, ids[: len(ids) // 2])
    pool_file = work / "pool.npz"
    np.savez(
        pool_file,
        embeddings=vectors.embeddings[in_pool],
        speakers=vectors.speakers[in_pool],
        emotions=vectors.emotions[in_pool],
    )
    manifest = work / "pool.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript", "emotion"])
        for u, keep in zip(utts, in_pool, strict=True):
            if keep:
                writer.writerow([u.path, u.speaker, u.gender or "", u.transcript or "", u.emotion or ""])
    rows = ~in_pool
    return (
        pool_file,
        manifest,
        vectors.embeddings[rows],
        vectors.speakers[rows],
        vectors.emotions[rows],
        [u for u, r in zip(utts, rows, strict=True) if r],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus")
    parser.add_argument("--preset", default="demo")
    parser.add_argument("--encoder", default="ge2e")
    parser.add_argument(
        "--alpha-reference-norm",
        type=float,
        default=None,
        help="alpha in relative units against this norm; without it alpha is absolute",
    )
    parser.add_argument(
        "--indicator",
        choices=["classifier", "prosody"],
        help="default: prosody with --corpus, classifier on synthetic embeddings",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="random 85/15 splits the UAR is averaged over")
    parser.add_argument(
        "--split",
        default="utterance",
        choices=["utterance", "speaker"],
        help="emotion classifier split: random utterances (paper) or held-out speakers",
    )
    parser.add_argument("--work", help="work folder to reuse (generated corpus, embeddings)")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="vpeval-table6-"))
    work.mkdir(parents=True, exist_ok=True)
    context = plugin_context(seed=args.seed, work_dir=work)
    args.indicator = args.indicator or ("prosody" if args.corpus else "classifier")
    if args.corpus:
        pool_file, manifest, x, speakers, emotions, utts = corpus_split(
            context, args.corpus, args.preset, args.encoder, work
        )
    else:
        from vpeval_embedding_anonymizers.synthetic import synthetic_embeddings

        if args.indicator == "prosody":
            parser.error("--indicator prosody needs --corpus (audio)")
        pool_x, pool_spk, pool_emo = synthetic_embeddings(40, 20, seed=1)
        pool_file, manifest = work / "pool.npz", None
        np.savez(pool_file, embeddings=pool_x, speakers=pool_spk, emotions=pool_emo)
        x, speakers, emotions = synthetic_embeddings(40, 10, seed=2)
        utts = [SimpleNamespace(emotion=e, gender=None) for e in emotions]

    from vpeval_embedding_anonymizers.compensation import EmotionCompensation
    from vpeval_embedding_anonymizers.selection import Selection

    def voices():
        return [Voice(f"u{i}", "utterance", context.rng("voice", i), utterance=u) for i, u in enumerate(utts)]

    common = {"pool_vectors": str(pool_file)}
    emotion_source = (
        {"emotion_corpus": {"use": "manifest", "params": {"path": str(manifest)}}}
        if args.indicator == "prosody"
        else {"emotion_vectors": str(pool_file)}
    )
    ec = EmotionCompensation(
        EmotionCompensation.Params(**common, **emotion_source, indicator=args.indicator, **alpha_units(args)),
        context.child("ec"),
    )
    ec_label = EmotionCompensation(
        EmotionCompensation.Params(**common, emotion_vectors=str(pool_file), **alpha_units(args), indicator="label"),
        context.child("ec"),
    )
    compensated = ec.anonymize_embeddings(x, voices())
    predicted = np.array(ec.source_emotions(x, voices()))
    systems = {
        "+ selection": Selection(Selection.Params(**common), context.child("se")).anonymize_embeddings(x, voices()),
        "+ OHNN": ec.base.anonymize_embeddings(x, voices()),
        f"+ OHNN + EC ({args.indicator})": compensated,
        "+ OHNN + EC (oracle)": ec_label.anonymize_embeddings(x, voices()),
    }
    from sklearn.metrics import balanced_accuracy_score

    print(
        f"{len(x)} evaluation vectors, {len(set(speakers.tolist()))} speakers; {args.indicator} indicator "
        f"accuracy {100 * np.mean(predicted == emotions):.1f} %, "
        f"UAR {100 * balanced_accuracy_score(emotions, predicted):.1f} %"
    )
    print(
        format_table(
            embedding_space_table(
                x, speakers, emotions, systems, seed=args.seed, repeats=args.repeats, split=args.split
            )
        )
    )


if __name__ == "__main__":
    main()
