"""experiments/vpc2026-track2.yaml on a tree in the VPC 2026 toolkit's Track 2 layout, German only (data/de_dev_enrolls,
de_dev_trials_mixed, de_dev / de_test, train_german, emodata_track2_dev / _test, their `_fast` "submission" copies;
tiny random-weight models under exp/: tests/vpc2026_track2_tree.py). The numbers mean nothing, the wiring is what
is tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from vpc2026_track2_tree import build_track2_tree

from vpeval.cli import main

RECIPE = Path(__file__).resolve().parents[1] / "experiments" / "vpc2026-track2.yaml"
GERMAN = ["--var", "LANG=de", "--var", "TRAIN=train_german", "--var", "SUFFIX=_fast"]
FAST = ["--var", "EPOCHS=1", "--var", "BATCH=4", "--var", "CROP=0.3"]  # speechbrain-train drops speech under a crop


FACTS = json.loads((Path(__file__).parent / "data" / "vpc2026_track2.json").read_text())


def test_the_recipe_carries_the_toolkit_values_per_language():
    """The recipe's defaults are English's; its header gives each language's training folder and epochs."""
    import yaml

    from vpeval.data.vpc import CHALLENGES

    text = RECIPE.read_text()
    variables = yaml.safe_load(text)["variables"]
    en = FACTS["languages"]["en"]
    assert (variables["LANG"], variables["TRAIN"], variables["EPOCHS"]) == ("en", en["train"], en["epochs"])
    assert (variables["BATCH"], FACTS["lr"]) == (FACTS["batch_size"], 0.01) and "lr: 0.01" in text
    for lang, values in FACTS["languages"].items():
        assert f"--var LANG={lang} --var TRAIN={values['train']}" in text.replace("  ", " ")
        assert f"--var EPOCHS={values['epochs']}\n" in text.replace("  ", " ")
        assert str(values["out_n_neurons"]) in text
    track2 = CHALLENGES["2026-track2"]
    assert list(track2.datasets) == FACTS["evaluated_sets"] and list(track2.utility) == FACTS["emotion_sets"]


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def track2_root(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("speechbrain")
    pytest.importorskip("transformers")
    pytest.importorskip("funasr")
    root = tmp_path_factory.mktemp("vpc2026-track2")
    return root, build_track2_tree(root, tmp_path_factory.mktemp("track2-work"))


def test_track2_validates_and_names_everything_missing_at_once(track2_root, tmp_path):
    root, wavlm = track2_root
    ok = cli("validate", str(RECIPE), "--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *GERMAN, *FAST)
    assert ok.exit_code == 0, ok.output
    # English was asked for, but the tree holds German only: every English folder is named in one run.
    english = cli("validate", str(RECIPE), "--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", "--var",
                  "SUFFIX=_fast", *FAST)  # fmt: skip
    assert english.exit_code == 2
    wanted = ("en_dev_enrolls", "en_dev_trials_mixed", "en_test_enrolls", "train_english", "en_dev_enrolls_fast")
    for folder in (*wanted, "data/en_dev_trials_mixed, ", "data/en_test_trials_mixed have no `text`"):
        assert folder in english.output, english.output
    # An empty root: the data folder, asv_ssl and the Whisper folder, each in a sentence, before anything loads.
    (tmp_path / "data").mkdir()
    empty = cli("validate", str(RECIPE), "--var", f"VPC_ROOT={tmp_path}", *GERMAN, *FAST)
    assert empty.exit_code == 2
    for what in (
        "asv_ssl",
        "whisper-large-v3",
        "ser_emotion2vec",
        "de_dev_enrolls",
        "train_german",
        "emodata_track2_dev",
    ):
        assert what in empty.output, empty.output


def _toolkit_wer(folder: Path, whisper: Path, language: str) -> float:
    """The toolkit's WER of one data folder: its pipeline calls on the folder's audio (read at 16 kHz as the
    pipeline's ffmpeg would), its text rules and SpeechBrain's ErrorRateStats (evaluate_asr.py, inference.py)."""
    import soundfile as sf
    from speechbrain.utils.metric_stats import ErrorRateStats

    from vpeval_speech.vpc_text import tokens

    pipe = _toolkit_pipe(whisper)
    refs = dict(line.split(" ", 1) for line in (folder / "text").read_text().splitlines())
    wavs = dict(line.split(" ", 1) for line in (folder / "wav.scp").read_text().splitlines())
    ids = [u for u in wavs if u in refs]  # it scores the utterances its `text` lists (here, not the VCTK ones)
    assert ids, "the set has references"
    hyps = {}
    for start in range(0, len(ids), 8):  # eval_batchsize 8; every clip here is under 30 s
        part = ids[start : start + 8]
        audio = [sf.read(wavs[u], dtype="float32")[0] for u in part]
        out = pipe(audio, batch_size=len(part), generate_kwargs={"language": language})
        hyps.update((u, str(o["text"])) for u, o in zip(part, out))
    stats = ErrorRateStats()
    stats.append(ids=ids, predict=[tokens(hyps[u]) for u in ids], target=[tokens(refs[u]) for u in ids])
    return stats.summarize("error_rate")


def _toolkit_pipe(whisper: Path):
    import torch
    from transformers import AutoModelForSpeechSeq2Seq, AutoProcessor, pipeline

    model = AutoModelForSpeechSeq2Seq.from_pretrained(whisper, dtype=torch.float32, use_safetensors=True)
    processor = AutoProcessor.from_pretrained(whisper)
    return pipeline(
        "automatic-speech-recognition", model=model, tokenizer=processor.tokenizer,
        feature_extractor=processor.feature_extractor, dtype=torch.float32, device="cpu", return_timestamps=False,
    )  # fmt: skip


@pytest.mark.slow
def test_track2_german_runs_end_to_end(track2_root, tmp_path):
    """The German evaluation on CPU: asv_ssl (O-O, O-A), asv_anon fine-tuned on the anonymized train_german (A-A),
    EER per de dev / test on the mixed trials, WER per trial folder equal to the toolkit's, and its Track 2 files."""
    import json

    root, wavlm = track2_root
    out = tmp_path / "run"
    # l2, not the recipe's toolkit-sign: on these tiny random networks the fine-tuned asv_anon's toolkit-sign scores
    # can all be equal (tests/test_vpc_recipes.py's Track 1 run: all 36 f-trial scores 1), which eer refuses
    result = cli(
        "--experiment", str(RECIPE), "--var", f"VPC_ROOT={root}", "--var", f"SSL_MODEL={wavlm}", *GERMAN, *FAST,
        "--var", "ASV_EMBEDDINGS=l2", "--cache", str(tmp_path / "cache"), "--output", str(out), "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text())["rows"]
    eer = {(r["attacker"], r["protocol"], r.get("dataset")) for r in rows if r["metric"] == "eer"}
    for dataset in ("de_dev", "de_test"):
        assert {("asv_ssl", "O-O", dataset), ("asv_ssl", "O-A", dataset), ("asv_anon", "A-A", dataset)} <= eer
    wer = {
        (r["anonymizer"], r["details"]["dataset"]): r["value"]
        for r in rows
        if r["metric"] == "wer" and "dataset" in r["details"]
    }
    whisper = root / "exp" / "openai" / "whisper-large-v3"
    toolkit = {}
    for dataset in ("de_dev", "de_test"):
        folder = f"{dataset}_trials_mixed"  # the toolkit's ASR set (<dataset>_asr joins the trial folders)
        toolkit["original", dataset] = _toolkit_wer(root / "data" / folder, whisper, "de")
        toolkit["anon", dataset] = _toolkit_wer(root / "data" / f"{folder}_fast", whisper, "de")
        assert wer["original", folder] == pytest.approx(toolkit["original", dataset], abs=1e-9)
        assert wer["submission", folder] == pytest.approx(toolkit["anon", dataset], abs=1e-9)
    # The toolkit's Track 2 files beside vpeval's: the ASR block carries those WERs at 3 decimals, the ASV_eval
    # block asv_ssl's A-A EER per set, result_for_rank both parts (plugins/reports/vpc tests their layout).
    summary = out / "results_summary"
    orig = (summary / "eval_orig_fast" / "results_orig.txt").read_text()
    asr = [line.split() for line in orig.split("---- ASR results ----\n")[1].splitlines()[1:]]
    assert {(c[1] + "_" + c[2], c[3]): float(c[4]) for c in asr} == {
        (d, s): round(v, 3) for (s, d), v in toolkit.items()
    }
    asv = [line.split() for line in orig.split("---- ASV_eval results ----\n")[1].split("\n\n")[0].splitlines()[1:]]
    eer = {
        r["dataset"]: round(r["value"], 3)
        for r in rows
        if r["metric"] == "eer" and r["attacker"] == "asv_ssl" and r["protocol"] == "A-A" and r["gender"] == "all"
        and r.get("dataset")
    }  # fmt: skip
    assert {c[1] + "_" + c[2]: float(c[6]) for c in asv} == eer
    post = (summary / "track2" / "eval_anon_1_de_fast" / "results_anon.txt").read_text()
    rank = (summary / "track2" / "result_for_rank_fast").read_text()
    assert rank == orig + "\n" + post + "\n"
    for name in ("asr", "ser", "asv"):
        assert (summary / "track2" / f"{name}_results_fast.csv").is_file()
