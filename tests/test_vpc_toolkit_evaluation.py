"""WER and UAR as the VoicePrivacy 2024 toolkit's own evaluation code computes them (issue 36, item 5).

The same tiny tree for both sides: tests/vpc_tree's real recordings (VCTK at 16 kHz, FSDD at 8 kHz, so the
ASR's resampling is exercised) with their `_fast` anonymized copies, IEMOCAP_dev / IEMOCAP_dev_fast folders
made of the same files and IEMOCAP_test / IEMOCAP_test_fast of libri_test's FSDD speakers (utt2emo cycling over
the four emotions, spk2fold alternating two folds), and random-weight exp/asr (EncoderASR wav2vec2 + CTC) and
exp/ser/fold_<k>/CKPT+<N> folders in the toolkit's layout. Toolkit side: Voice-Privacy-Challenge-2024 commit
400de3a, evaluation/utility/asr/evaluate_asr.py's asr_eval_speechbrain (eval_batchsize 1: a batch of one is what
vpeval transcribes on the CPU) and evaluation/utility/ser/evaluate_ser.py's evaluate_ser, run as they are, with
the per-utterance labels of its classify_batch calls recorded, its per-fold rows (results_folds<suffix>.csv), its
per-split means and the SER block save_result_summary prints from them (run_evaluation.py: sort_values by dataset
and split, to_string), which vpeval's uar split rows and the vpc report's results_orig.txt must equal byte for
byte. One substitution: torchaudio 2.9+ (installed here) loads files only through
torchcodec, so torchaudio.load is, while they run, its soundfile backend's reading (float32 [channels, samples]).

- test_matches_recorded_toolkit_outputs (always runs): vpeval against tests/data/vpc_toolkit_evaluation.json,
  the toolkit's outputs recorded by scripts/vpc_toolkit_evaluation_reference.py on this tree.
- test_matches_the_toolkit_run_here (VPC_TOOLKIT_2024 = a checkout of the toolkit at 400de3a; pandas must be
  importable, which vpeval does not install): the toolkit's code run now, against vpeval.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import pytest
from vpc_toolkit_loading import read_crop, toolkit_packages, torchaudio_reading

FIXTURE = Path(__file__).parent / "data" / "vpc_toolkit_evaluation.json"
SUFFIX = "_fast"
ASR_SETS = ["libri_dev_trials_f", "libri_dev_trials_m", "libri_test_trials_f", "libri_test_trials_m"]
SER_SETS = ["IEMOCAP_dev", "IEMOCAP_test"]
UTILITY_PACKAGES, SER = ["evaluation", "evaluation.utility"], "evaluation.utility.ser"  # imported without __init__
# IEMOCAP_dev: libri_dev's speech; IEMOCAP_test: libri_test's FSDD speakers (8 kHz; the VCTK ones are dev's too)
SER_SOURCES = {"IEMOCAP_dev": ("libri_dev", None), "IEMOCAP_test": ("libri_test", ("lucas", "nicolas"))}
EMOTIONS = ["neu", "ang", "hap", "sad"]
FOLDS = 2
SENTENCES = [
    "PLEASE CALL STELLA",
    "ASK HER TO BRING THESE THINGS WITH HER FROM THE STORE",
    "SIX SPOONS OF FRESH SNOW PEAS",
]


def build_tree(root: Path) -> dict[str, Path]:
    """The data folders and random-weight models, the same bytes on every machine (fixed seeds)."""
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder

    data = build_vpc_tree(root, suffix=SUFFIX, train_per_speaker=1)
    for name in ASR_SETS:  # VCTK's files come without text: references to score the 16 kHz files too
        for folder in (data / name, data / f"{name}{SUFFIX}"):
            texts = read_raw_kaldi(folder / "text")
            ids = [line.split()[0] for line in (folder / "wav.scp").read_text().splitlines()]
            lines = [f"{u} {texts.get(u, SENTENCES[i % 3])}\n" for i, u in enumerate(ids)]
            (folder / "text").write_text("".join(lines))
    for (name, (libri, only)), suffix in itertools.product(SER_SOURCES.items(), ("", SUFFIX)):
        folder = data / f"{name}{suffix}"  # IEMOCAP stand-ins: LibriSpeech stand-ins' speech with emotions, folds
        folder.mkdir()
        wavs, speakers = {}, {}
        for part in ("enrolls", "trials_f", "trials_m"):
            source = data / f"{libri}_{part}{suffix}"
            wavs |= dict(line.split(maxsplit=1) for line in (source / "wav.scp").read_text().splitlines())
            speakers |= dict(line.split() for line in (source / "utt2spk").read_text().splitlines())
        ids = sorted(u for u in wavs if only is None or speakers[u] in only)
        speakers = {u: speakers[u] for u in ids}
        (folder / "wav.scp").write_text("".join(f"{u} {wavs[u]}\n" for u in ids))
        (folder / "utt2spk").write_text("".join(f"{u} {speakers[u]}\n" for u in ids))
        (folder / "utt2emo").write_text("".join(f"{u} {EMOTIONS[i % 4]}\n" for i, u in enumerate(ids)))
        spk = sorted(set(speakers.values()))
        (folder / "spk2fold").write_text("".join(f"{s} {i % FOLDS + 1}\n" for i, s in enumerate(spk)))
    asr = tiny_encoder_asr_folder(root / "tiny-asr", folder=root / "exp" / "asr")
    staged = tiny_emotion_folders(root / "tiny-ser", folds=FOLDS, hub=root / "tiny-asr" / "hf")
    for fold in range(1, FOLDS + 1):  # the toolkit's exp/ser/fold_<k>/CKPT+<N> (its scan_checkpoint's choice)
        checkpoint = root / "exp" / "ser" / f"fold_{fold}" / "CKPT+1"
        shutil.copytree(staged / f"fold_{fold}", checkpoint)
        yaml = checkpoint / "hyperparams.yaml"
        yaml.write_text(yaml.read_text().replace(str(staged / f"fold_{fold}"), str(checkpoint)))
    return {"data": data, "asr": asr, "ser": root / "exp" / "ser"}


def read_raw_kaldi(path: Path) -> dict[str, str]:
    """utt-id -> the rest of the line exactly as save_kaldi_format wrote it (spaces kept)."""
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in path.read_text().splitlines()}


def toolkit_outputs(toolkit: Path, tree: dict[str, Path], work: Path) -> dict:
    """What the toolkit's evaluate_asr and evaluate_ser compute on the tree: transcripts, per-set error counts
    and WER, per-utterance predictions, per-speaker and mean UAR."""
    with torchaudio_reading(read_crop), toolkit_packages(toolkit, [*UTILITY_PACKAGES, "evaluation.utility.asr", SER]):
        from evaluation.utility.asr.evaluate_asr import asr_eval_speechbrain
        from evaluation.utility.ser import evaluate_ser as ser_module

        results = work / "asr"
        params = {
            "model_dir": tree["asr"],
            "model_type": "EncoderASR",
            "device": "cpu",
            "results_dir": results,
            "eval_batchsize": 1,
        }
        table = asr_eval_speechbrain(ASR_SETS, tree["data"], params, SUFFIX, "cpu")
        asr = {"transcripts": {}, "wer": {}}
        for index, name in enumerate(ASR_SETS + [s + SUFFIX for s in ASR_SETS]):
            asr["transcripts"][name] = read_raw_kaldi(results / name / "text")
            first = (results / name / "wer").read_text().splitlines()[0]  # %WER x [ E / N, ... ]
            errors, words = first.split("[", 1)[1].split(",")[0].split("/")
            asr["wer"][name] = {"errors": int(errors), "words": int(words), "WER": float(table["WER"][index])}

        predictions: dict[str, dict[str, str]] = {}
        current = {}
        original_item = ser_module.FoldSERDataset.__getitem__
        original_class = ser_module.foreign_class

        def item(self, index):  # which utterance is being classified
            current["utt"], current["set"] = self.data[index][0], self.folder
            return original_item(self, index)

        def recording_class(*args, **kwargs):
            classifier = original_class(*args, **kwargs)
            classify = classifier.classify_batch

            def classify_batch(wav, *rest):
                out = classify(wav, *rest)
                predictions.setdefault(current["set"], {})[current["utt"]] = out[3][0]
                return out

            classifier.classify_batch = classify_batch
            return classifier

        original_init = ser_module.FoldSERDataset.__init__

        def init(self, data_path):
            original_init(self, data_path)
            self.folder = Path(data_path).name

        ser_module.FoldSERDataset.__getitem__, ser_module.FoldSERDataset.__init__ = item, init
        ser_module.foreign_class = recording_class
        try:
            (work / "ser").mkdir(parents=True)
            means = ser_module.evaluate_ser(
                SER_SETS, tree["data"], tree["ser"], SUFFIX, {"results_dir": work / "ser"}, "cpu"
            )
        finally:
            ser_module.FoldSERDataset.__getitem__, ser_module.FoldSERDataset.__init__ = original_item, original_init
            ser_module.foreign_class = original_class
        folds = __import__("pandas").read_csv(work / "ser" / f"results_folds{SUFFIX}.csv")
        per_speaker: dict[str, list[float]] = {}
        fold_rows = []
        for _, row in folds.iterrows():
            per_speaker.setdefault(row["ser"], []).append(float(row["UAR"]))
            accuracy = {c[4:]: float(row[c]) for c in folds.columns if c.startswith("ACC_") and row[c] == row[c]}
            fold_rows.append({"set": f"{row['dataset']}_{row['split']}", "ser": row["ser"], "fold": str(row["fold"])})
            fold_rows[-1] |= {"UAR": float(row["UAR"]), "accuracy": accuracy}
        uar = {
            f"{d}_{s}/{ser}": float(v)
            for d, s, ser, v in zip(means["dataset"], means["split"], means["ser"], means[("UAR", "mean")])
        }
        # save_result_summary's SER block (run_evaluation.py): the means sorted by dataset and split, to_string()
        block = means.sort_values(by=["dataset", "split"]).to_string()
        ser = {"predictions": predictions, "per_speaker_uar": per_speaker, "uar": uar, "fold_rows": fold_rows}
        ser["results_orig_block"] = block
        return {"asr": asr, "ser": ser}


def toolkit_2026_ser_block(toolkit: Path, tree: dict[str, Path], work: Path) -> str:
    """The SER block the VPC 2026 toolkit (e6810a4: evaluation/utility/ser/evaluate_ser.py, backend speechbrain,
    as configs/track1/eval_pre.yaml runs exp/ser) and run_evaluation.py's save_result_summary print on the tree."""
    with torchaudio_reading(read_crop), toolkit_packages(toolkit, [*UTILITY_PACKAGES, SER]):
        from evaluation.utility.ser import evaluate_ser as ser_module

        (work / "ser").mkdir(parents=True)
        params = {"results_dir": work / "ser", "backend": "speechbrain"}
        means = ser_module.evaluate_ser(SER_SETS, tree["data"], tree["ser"], SUFFIX, params, "cpu")
        return means.sort_values(by=["dataset", "split"]).to_string()


def vpeval_outputs(tree: dict[str, Path], work: Path) -> dict:
    """The same numbers from vpeval's wer (speechbrain-asr, normaliser vpc2024, sets) and uar (speechbrain
    evaluator, spk2fold) metrics, as the recipes run them."""
    from vpeval.api import MetricInputs
    from vpeval.data.kaldi import read_data_dir
    from vpeval.plugins import plugin_context
    from vpeval.types import Corpus
    from vpeval_speech.speechbrain_asr import SpeechBrainASR
    from vpeval_speech.uar import UAR
    from vpeval_speech.wer import WER, speech_of

    data = tree["data"]

    def joined(names: list[str], name: str) -> Corpus:
        corpora = [read_data_dir(data / n) for n in names]
        return Corpus(
            name,
            [u for c in corpora for u in c.utterances],
            {k: v for c in corpora for k, v in c.speaker_gender.items()},
        )

    context = plugin_context(seed=0, work_dir=work / "wer")
    asr = SpeechBrainASR(SpeechBrainASR.Params(source=str(tree["asr"])), context)
    original, anonymized = joined(ASR_SETS, "libri"), joined([s + SUFFIX for s in ASR_SETS], "libri" + SUFFIX)
    transcripts = {}
    for names, corpus, tail in ((ASR_SETS, original, ""), (ASR_SETS, anonymized, SUFFIX)):
        for name in names:
            ids = set(read_raw_kaldi(data / name / "text"))
            transcripts[name + tail] = {u.id: asr.transcribe(speech_of(asr, u)).text for u in corpus if u.id in ids}
    params = WER.Params(
        asr="speechbrain-asr",
        asr_params={"source": str(tree["asr"])},
        sets=[str(data / s) for s in ASR_SETS],
        normaliser="vpc2024",
        bootstrap=0,
    )
    wer = {}
    for row in WER(params, context).compute(MetricInputs(original=original, anonymized=anonymized)):
        if "dataset" in row.details:
            name = row.details["dataset"] + ("" if row.details["speech"] == "original" else SUFFIX)
            errors = round(row.value * row.details["reference_words"] / 100.0)
            wer[name] = {"errors": errors, "words": row.details["reference_words"], "WER": row.value}

    ser_context = plugin_context(seed=0, work_dir=work / "uar")
    spk2fold = [data / name / "spk2fold" for name in SER_SETS]
    uar_params = UAR.Params(
        evaluator="speechbrain", models=str(tree["ser"]), spk2fold=[str(p) for p in spk2fold], bootstrap=0
    )
    metric = UAR(uar_params, ser_context)
    emotion_original = joined(SER_SETS, "IEMOCAP")
    emotion_anonymized = joined([s + SUFFIX for s in SER_SETS], "IEMOCAP" + SUFFIX)
    rows = metric.compute(MetricInputs(original=emotion_original, anonymized=emotion_anonymized))
    from vpeval_speech.speechbrain_emotion import models_by_speaker, predictions
    from vpeval_vpc_report.results import _toolkit_ser

    folders, _ = models_by_speaker(tree["ser"], spk2fold, sorted(emotion_original.speakers))
    labels = {}
    for name in SER_SETS + [s + SUFFIX for s in SER_SETS]:
        utterances = list(read_data_dir(data / name).utterances)
        labels[name] = dict(zip((u.id for u in utterances), predictions(metric, utterances, folders, name).tolist()))
    pooled = [r for r in rows if "dataset" not in r.details]
    split = [r for r in rows if "dataset" in r.details]

    def ser_of(r) -> str:
        return "anon" if r.details["speech"] == "anonymized" else "original"

    fold_rows = [
        {"set": r.details["dataset"], "ser": ser_of(r), "fold": f["fold"], "UAR": f["UAR"], "accuracy": f["accuracy"]}
        for r in split
        for f in r.details["fold_rows"]
    ]
    as_rows = [  # as results.json rows: the anonymized speech under its anonymizer's label
        {"metric": "uar", "anonymizer": "original" if ser_of(r) == "original" else "fast", "value": r.value}
        | {"details": r.details}
        for r in rows
    ]
    ser = {
        "predictions": labels,
        "per_speaker_uar": {
            ser_of(r): [r.details["per_speaker"][s]["uar"] for s in r.details["per_speaker"]] for r in pooled
        },
        "uar": {f"{r.details['dataset']}/{ser_of(r)}": r.value for r in split},
        "fold_rows": fold_rows,
        "results_orig_block": _toolkit_ser(as_rows, "fast"),
        "results_orig_block_2026": _toolkit_ser(as_rows, "fast", every_emotion=True),
        "read_at_own_rate_not_16khz": rows[0].details["read_at_own_rate_not_16khz"],
    }
    return {"asr": {"transcripts": transcripts, "wer": wer}, "ser": ser}


def assert_equal(mine: dict, theirs: dict) -> None:
    """Transcripts, error counts and predictions exactly; WER and UAR as the toolkit rounds them (3 decimals)."""
    assert mine["asr"]["transcripts"] == theirs["asr"]["transcripts"]
    for name, row in theirs["asr"]["wer"].items():
        assert (mine["asr"]["wer"][name]["errors"], mine["asr"]["wer"][name]["words"]) == (row["errors"], row["words"])
        assert round(mine["asr"]["wer"][name]["WER"], 3) == row["WER"], name
    assert mine["ser"]["predictions"] == theirs["ser"]["predictions"]
    for speech, values in theirs["ser"]["per_speaker_uar"].items():  # the toolkit's rows: spk2fold's order
        assert sorted(round(v, 3) for v in mine["ser"]["per_speaker_uar"][speech]) == sorted(values)
    for key, value in theirs["ser"]["uar"].items():  # per IEMOCAP split and speech (the SER block's rows)
        assert mine["ser"]["uar"][key] == pytest.approx(value, abs=1e-9), key
    assert mine["ser"]["fold_rows"] == theirs["ser"]["fold_rows"]  # results_folds<suffix>.csv, row for row
    assert mine["ser"]["results_orig_block"] == theirs["ser"]["results_orig_block"]  # byte for byte


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("vpc-toolkit-eval"))


def test_matches_recorded_toolkit_outputs(tree, tmp_path):
    recorded = json.loads(FIXTURE.read_text())
    mine = vpeval_outputs(tree, tmp_path)
    assert mine["ser"]["read_at_own_rate_not_16khz"] > 0  # FSDD's 8 kHz files: the reading the toolkit has
    assert_equal(mine, recorded)
    # not a vacuous comparison: the random models' texts and labels vary
    texts = [t for by_utt in recorded["asr"]["transcripts"].values() for t in by_utt.values()]
    assert len(set(texts)) > len(texts) // 2
    assert len({v for by_utt in recorded["ser"]["predictions"].values() for v in by_utt.values()}) > 1


@pytest.mark.skipif(
    not os.environ.get("VPC_TOOLKIT_2024"),
    reason="VPC_TOOLKIT_2024 is not set: give a checkout of Voice-Privacy-Challenge-2024 at 400de3a (and make "
    "pandas importable) to run its evaluate_asr / evaluate_ser here; the recorded outputs are checked regardless",
)
def test_matches_the_toolkit_run_here(tree, tmp_path):
    theirs = toolkit_outputs(Path(os.environ["VPC_TOOLKIT_2024"]), tree, tmp_path / "toolkit")
    assert_equal(vpeval_outputs(tree, tmp_path / "vpeval"), theirs)


@pytest.mark.skipif(
    not os.environ.get("VPC_TOOLKIT_2026"),
    reason="VPC_TOOLKIT_2026 is not set: give a checkout of Voice-Privacy-Challenge-2026 at e6810a4 (pandas "
    "importable) to compare the Track 1 SER block (its ACC columns: every fold row's) with its evaluate_ser",
)
def test_ser_block_matches_the_2026_toolkit_run_here(tree, tmp_path):
    theirs = toolkit_2026_ser_block(Path(os.environ["VPC_TOOLKIT_2026"]), tree, tmp_path / "toolkit")
    mine = vpeval_outputs(tree, tmp_path / "vpeval")["ser"]
    assert mine["results_orig_block_2026"] == theirs
    assert mine["results_orig_block_2026"].splitlines()[0] != mine["results_orig_block"].splitlines()[0]


def test_vpc2024_tokens_count_as_speechbrains_error_rate_stats():
    """The toolkit's plain_text_key + ErrorRateStats on texts where the rules matter (case, punctuation, two
    spaces, an empty hypothesis): vpc_text.errors(rules='vpc2024') gives the same errors and words."""
    from speechbrain.utils.metric_stats import ErrorRateStats

    from vpeval_speech import vpc_text

    pairs = [
        ("PLEASE CALL STELLA", "please call stella"),
        ("ASK HER TO BRING", "ASK HER  TO BRING."),
        ("SIX SPOONS", ""),
        ("FOUR", " FOUR "),
        ("THE CAT SAT", "THE HAT SAT ON"),
    ]
    for reference, hypothesis in pairs:
        stats = ErrorRateStats()
        stats.append(ids=["u"], predict=[hypothesis.strip().split(" ")], target=[reference.strip().split(" ")])
        summary = stats.summarize()
        expected = (summary["num_edits"], summary["num_scored_tokens"])
        assert vpc_text.errors(reference, hypothesis, "vpc2024") == expected, (reference, hypothesis)
