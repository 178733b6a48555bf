"""docs/vpc.md's parity table: vpeval's per-trial O-A scores and EERs against the VoicePrivacy toolkit's reading.

The tree, submissions and toolkit reference are tests/test_vpc_submission_audio.py's (small real recordings,
a tiny random-weight exp/asv_orig, speechbrain's own EncoderClassifier as the reference). Per submission:
the largest per-trial score difference and the EER of vpeval's run, of the toolkit's reading, and of the
reading vpeval had before issue 36 (a 16-bit copy clipped at +-1; soxr to 16 kHz before the peak division).

    .venv/bin/python benchmarks/vpc_parity.py

With --toolkit-code: the second table, vpeval against the toolkits' own evaluation code on the trees of
tests/test_vpc_toolkit_evaluation.py (WER, UAR; VPC 2024 400de3a) and tests/test_vpc_toolkit_asv_ssl.py
(asv_ssl; VPC 2026 e6810a4): the toolkit's outputs recorded in tests/data, or computed now from the checkouts
VPC_TOOLKIT_2024 / VPC_TOOLKIT_2026 name. "Before" is vpeval's reading before this comparison (soxr to 16 kHz
for the ASR and the emotion classifiers, vpeval's text normaliser, unrounded per-speaker UAR).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]


def _tests():
    spec = importlib.util.spec_from_file_location("vpc_audio", ROOT / "tests" / "test_vpc_submission_audio.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_reading(path: str, tmp: Path) -> str:
    """What the old anonymize step stored: the file at 16 kHz (soxr), as 16-bit PCM clipped at +-1."""
    from vpeval import audio as audio_io

    samples, rate = audio_io.read_audio(path, 16000)
    out = tmp / "old" / Path(path).name
    audio_io.write_audio(out, samples, 16000)
    return str(out)


def _eer(scores: dict, labels: dict) -> float:
    from vpeval.api import MetricInputs
    from vpeval.plugins import get_plugin_manager
    from vpeval.types import Scores

    keys = sorted(scores)
    data = Scores(np.array([scores[k] for k in keys]), np.array([labels[k] for k in keys]))
    (row,) = [
        r for r in get_plugin_manager().get("metric", "eer")().compute(MetricInputs(scores=data)) if r.gender == "all"
    ]
    return row.value


def main() -> None:
    t = _tests()
    tmp = Path(tempfile.mkdtemp(prefix="vpc-parity-"))
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speechbrain.tiny import write_ecapa_folder

    data = build_vpc_tree(tmp, suffix="_fast", train_per_speaker=2)
    write_ecapa_folder(tmp / "exp" / "asv_orig", seed=5)
    for folder in t.FOLDERS:
        t._rewrite(data / f"{folder}_fast", data / f"{folder}_float", tmp / "float", t._louder, "FLOAT")
        t._rewrite(data / f"{folder}_fast", data / f"{folder}_24k", tmp / "24k", t._at_24k, "PCM_16")
    labels = {}
    for trials in ("libri_dev_trials_f", "libri_dev_trials_m"):
        for line in (data / trials / "trials").read_text().splitlines():
            spk, uid, label = line.split()
            labels[(spk, uid)] = label == "target"
    print(
        "| submission | max abs score difference, vpeval - toolkit | EER toolkit | EER vpeval | "
        "max abs score difference, old reading - toolkit | EER old reading |"
    )
    print("|---|---|---|---|---|---|")
    for suffix, what in (("_fast", "16-bit, 16 kHz"), ("_float", "float32, peaks 1.3-1.8"), ("_24k", "16-bit, 24 kHz")):
        mine, _ = t._vpeval_scores(tmp, suffix, tmp / f"run{suffix}")
        theirs = t._toolkit_scores(tmp, suffix, tmp / "savedir")
        # the old reading: the same toolkit computation on the files the old anonymize step stored
        for folder in t.FOLDERS:
            old = data / f"{folder}_old{suffix}"
            old.mkdir(exist_ok=True)
            for name in ("utt2spk", "spk2gender", "text"):
                (old / name).write_text((data / f"{folder}{suffix}" / name).read_text())
            lines = [
                line.split(maxsplit=1) for line in (data / f"{folder}{suffix}" / "wav.scp").read_text().splitlines()
            ]
            (old / "wav.scp").write_text("".join(f"{u} {_old_reading(p, tmp / suffix)}\n" for u, p in lines))
        before = t._toolkit_scores(tmp, f"_old{suffix}", tmp / "savedir")
        assert sf.info(next((tmp / suffix / "old").glob("*.wav"))).subtype == "PCM_16"
        new = max(abs(mine[k] - theirs[k]) for k in theirs)
        old = max(abs(before[k] - theirs[k]) for k in theirs)
        print(
            f"| {what} | {new:.2g} | {_eer(theirs, labels):.2f} | {_eer(mine, labels):.2f} | {old:.2g} | "
            f"{_eer(before, labels):.2f} |"
        )


def _module(name: str):
    if str(ROOT / "tests") not in sys.path:  # the test modules import their helpers (tests/conftest.py's path)
        sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toolkit_code_rows() -> None:
    """WER, UAR and asv_ssl against the toolkits' own code (see the module's docstring)."""
    import json
    import os

    from vpeval.data.kaldi import read_data_dir
    from vpeval.plugins import plugin_context
    from vpeval_speech.speechbrain_asr import SpeechBrainASR
    from vpeval_speech.speechbrain_emotion import load_classifier, macro_recall, models_by_speaker

    tmp = Path(tempfile.mkdtemp(prefix="vpc-toolkit-code-"))
    t = _module("test_vpc_toolkit_evaluation")
    tree = t.build_tree(tmp / "tree")
    live = os.environ.get("VPC_TOOLKIT_2024")
    theirs = t.toolkit_outputs(Path(live), tree, tmp / "tk") if live else json.loads(t.FIXTURE.read_text())
    mine = t.vpeval_outputs(tree, tmp / "vpeval")
    data = tree["data"]
    # before: soxr to 16 kHz for both classifiers
    asr = SpeechBrainASR(SpeechBrainASR.Params(source=str(tree["asr"])), plugin_context(work_dir=tmp / "old"))
    texts = theirs["asr"]["transcripts"]
    old_texts = {}
    for name in texts:
        corpus = read_data_dir(data / name)
        old_texts[name] = {u.id: asr.transcribe(u.load(16000)).text for u in corpus if u.id in texts[name]}
    count = sum(len(v) for v in texts.values())
    same = sum(mine["asr"]["transcripts"][n][u] == texts[n][u] for n in texts for u in texts[n])
    old_same = sum(old_texts[n][u] == texts[n][u] for n in texts for u in texts[n])
    # the toolkit's WER column is rounded to 3 decimals; error and word counts are compared exactly
    wer_diff = max(abs(round(mine["asr"]["wer"][n]["WER"], 3) - theirs["asr"]["wer"][n]["WER"]) for n in texts)
    counts = all(
        (mine["asr"]["wer"][n]["errors"], mine["asr"]["wer"][n]["words"])
        == (theirs["asr"]["wer"][n]["errors"], theirs["asr"]["wer"][n]["words"])
        for n in texts
    )
    predictions = theirs["ser"]["predictions"]
    labels = sum(len(v) for v in predictions.values())
    ser_same = sum(mine["ser"]["predictions"][n][u] == predictions[n][u] for n in predictions for u in predictions[n])
    spk2fold = [data / name / "spk2fold" for name in t.SER_SETS]
    speakers = sorted({u.speaker for name in t.SER_SETS for u in read_data_dir(data / name)})
    folders, _ = models_by_speaker(tree["ser"], spk2fold, speakers)
    old_same_ser, old_uar = 0, {}
    for name in predictions:
        corpus = read_data_dir(data / name)
        emotions = {u.id: u.emotion for u in corpus}
        by_speaker: dict[str, list] = {}
        for u in corpus:
            label = load_classifier(str(folders[u.speaker]), None, str(tmp / "hf")).classify(
                u.load(16000), "cpu", _no_autocast
            )
            old_same_ser += label == predictions[name][u.id]
            by_speaker.setdefault(u.speaker, []).append((emotions[u.id], label))
        uars = [
            100 * macro_recall(np.array([a for a, _ in v]), np.array([b for _, b in v])) for v in by_speaker.values()
        ]
        speech = "anon" if name.endswith(t.SUFFIX) else "original"
        old_uar[f"{name.removesuffix(t.SUFFIX)}/{speech}"] = float(np.mean(uars))
    uar_diff = max(abs(mine["ser"]["uar"][k] - theirs["ser"]["uar"][k]) for k in theirs["ser"]["uar"])
    old_uar_diff = max(abs(old_uar[k] - theirs["ser"]["uar"][k]) for k in theirs["ser"]["uar"])
    print("| what | compared | vpeval vs toolkit | before vs toolkit |")
    print("|---|---|---|---|")
    print(f"| ASR transcripts (EncoderASR, 8 sets, 16 and 8 kHz) | equal texts | {same}/{count} | {old_same}/{count} |")
    print(
        f"| WER per set | errors and words equal; max abs WER difference at 3 decimals | {counts}; {wer_diff:.2g} | |"
    )
    print(f"| SER predictions (2 folds, 16 and 8 kHz) | equal labels | {ser_same}/{labels} | {old_same_ser}/{labels} |")
    print(f"| UAR per IEMOCAP split (original, anon) | max abs difference (%) | {uar_diff:.2g} | {old_uar_diff:.3g} |")
    folds = sum(a == b for a, b in zip(mine["ser"]["fold_rows"], theirs["ser"]["fold_rows"]))
    print(f"| SER fold rows (results_folds.csv) | equal rows | {folds}/{len(theirs['ser']['fold_rows'])} | |")
    same_block = mine["ser"]["results_orig_block"] == theirs["ser"]["results_orig_block"]
    print(f"| SER block of results_orig.txt | byte for byte | {'equal' if same_block else 'differs'} | |")
    s2 = _module("test_vpc_toolkit_asv_ssl")
    ssl_tree = s2.build_tree(tmp / "ssl")
    live = os.environ.get("VPC_TOOLKIT_2026")
    recorded = s2.toolkit_embeddings(Path(live), ssl_tree) if live else json.loads(s2.FIXTURE.read_text())
    vectors = s2.vpeval_embeddings(ssl_tree, tmp / "ssl-run")
    rates = s2.rates(ssl_tree)
    outputs = {k: s2.unit(v) for k, v in recorded["network_outputs"].items()}
    signs = {k: np.asarray(v) for k, v in recorded["embeddings"].items()}
    at16 = [k for k in outputs if rates[k] == 16000]
    at8 = [k for k in outputs if rates[k] != 16000]
    emb16 = max(np.abs(vectors[k] - outputs[k]).max() for k in at16)
    emb8 = max(np.abs(vectors[k] - outputs[k]).max() for k in at8)
    score_unit = score_sign = 0.0
    for suffix in ("", s2.SUFFIX):
        ours = s2.trial_scores(ssl_tree, vectors, suffix)
        unit_scores = s2.trial_scores(ssl_tree, outputs, suffix)
        sign_scores = s2.trial_scores(ssl_tree, signs, suffix)
        vctk = [k for k in ours if k.split()[0].startswith("p") and k.split()[1].startswith("p")]
        score_unit = max(score_unit, max(abs(ours[k] - unit_scores[k]) for k in vctk))
        score_sign = max(score_sign, max(abs(ours[k] - sign_scores[k]) for k in vctk))
    what = "max abs difference to the network's output at unit length"
    print(f"| asv_ssl embeddings, 16 kHz files | {what} | {emb16:.2g} | |")
    print(f"| asv_ssl trial scores, 16 kHz | max abs difference, same | {score_unit:.2g} | |")
    what = "max abs difference to the scores of the toolkit's +-1 embeddings"
    print(f"| asv_ssl trial scores, 16 kHz | {what} | {score_sign:.3g} | |")
    print(f"| asv_ssl embeddings, 8 kHz files | max abs difference (WavLM unresampled in the toolkit) | {emb8:.3g} | |")
    asv_ssl_normalizations(s2, ssl_tree, recorded, tmp)


def asv_ssl_normalizations(s2, tree, recorded: dict, tmp: Path) -> None:
    """The speechbrain attacker's asv_ssl scores with embedding_normalization l2 and toolkit-sign against the
    toolkit's (its +-1 embeddings; the network's outputs at unit length), and the EERs of each, per trial list
    (libri_dev_trials_mixed, original and _fast): on its 16 kHz trials (VCTK speakers, read alike by both) and on
    all of its trials (vpeval's own two settings)."""
    rates = s2.rates(tree)
    signs = {k: np.asarray(v, dtype=np.float64) for k, v in recorded["embeddings"].items()}
    units = {k: s2.unit(v) for k, v in recorded["network_outputs"].items()}
    print()
    print(
        "| trials | scores compared | toolkit-sign vs toolkit | l2 vs unit-length outputs | EER toolkit | "
        "EER toolkit-sign | EER l2 | EER toolkit-sign, all trials | EER l2, all trials |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for suffix in ("", s2.SUFFIX):
        trials = (tree["data"] / f"libri_dev_trials_mixed{suffix}" / "trials").read_text().splitlines()
        labels = {" ".join(line.split()[:2]): line.split()[2] == "target" for line in trials}
        sign = s2.vpeval_attacker_scores(tree, tmp / f"sign{suffix}", "toolkit-sign", suffix)
        l2 = s2.vpeval_attacker_scores(tree, tmp / f"l2{suffix}", "l2", suffix)
        official, correct = s2.trial_scores(tree, signs, suffix), s2.trial_scores(tree, units, suffix)
        at16 = [k for k in official if all(rates[f] == 16000 for f in s2._trial_files(tree, k, suffix))]
        d_sign = max(abs(sign[k] - official[k]) for k in at16)
        d_l2 = max(abs(l2[k] - correct[k]) for k in at16)

        def eer(scores: dict, keys: list[str], labels: dict = labels) -> float:
            return _eer({k: scores[k] for k in keys}, {k: labels[k] for k in keys})

        name = f"libri_dev_trials_mixed{suffix}"
        print(
            f"| {name} ({len(at16)} at 16 kHz of {len(labels)}) | {len(at16)} | {d_sign:.2g} | {d_l2:.2g} | "
            f"{eer(official, at16):.2f} | {eer(sign, at16):.2f} | {eer(l2, at16):.2f} | "
            f"{eer(sign, list(labels)):.2f} | {eer(l2, list(labels)):.2f} |"
        )


def _no_autocast():
    from contextlib import nullcontext

    return nullcontext()


if __name__ == "__main__":
    toolkit_code_rows() if "--toolkit-code" in sys.argv else main()
