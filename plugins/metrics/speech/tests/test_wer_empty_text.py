"""Kaldi `text` lines with no words, counted as the VoicePrivacy toolkits' WER step counts them (issue 36).

The toolkits (VPC 2024 400de3a and VPC 2026 e6810a4, utils/data_io.py read_kaldi_format with
values_as_string=True, then compute_wer) skip a blank line (no fields) and keep a line with the utterance id
alone as the reference "": VPC 2024's plain_text_key makes it one empty token, which SpeechBrain's
ErrorRateStats counts as no reference word while the hypothesis' words still count as edits. vpeval's own
normaliser skips such a line and says so (skipped_empty_reference), never as a missing transcript. The
reference side is re-expressed below from the toolkit; with VPC_TOOLKIT_2024 set (a checkout at 400de3a,
pandas and hyperpyyaml importable) the toolkit's own read_kaldi_format and compute_wer are called instead.
"""

from __future__ import annotations

import importlib.util
import os
import types
from pathlib import Path

import pytest

from vpeval.api import MetricInputs
from vpeval.data.kaldi import read_data_dir
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus
from vpeval_speech.wer import WER

# utterance index -> the rest of its `text` line (None: no line); a blank line and a spaces-only line between
TEXT_LINES = {0: "PLEASE CALL STELLA", 1: "", 2: "   ", 3: "SIX  SPOONS OF   FRESH SNOW PEAS", 4: None, 5: "ASK HER"}
HYPOTHESES = ["PLEASE CALL STELLA", "HELLO THERE", "", "SIX SPOONS OF FRESH SNOW", "ANYTHING", "ASK HER TO"]


def read_kaldi_format(filename) -> dict[str, str]:
    """The toolkits' utils/data_io.read_kaldi_format(values_as_string=True), as written there."""
    keys, values = [], []
    with open(filename, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) == 1:
                keys.append(fields[0].strip())
                values.append("")
            if len(fields) == 2:
                keys.append(fields[0].strip())
                values.append(fields[1].strip())
            elif len(fields) > 2:
                keys.append(fields[0].strip())
                values.append(" ".join(x.strip() for x in fields[1:]))
    return dict(zip(keys, values))


def compute_wer(references: dict[str, str], hypotheses: dict[str, str]) -> float:
    """VPC 2024's InferenceSpeechBrainASR.compute_wer: plain_text_key tokens into SpeechBrain's ErrorRateStats."""
    from speechbrain.utils.metric_stats import ErrorRateStats

    stats = ErrorRateStats()
    ids = list(references)
    tokens = [text.strip().split(" ") for text in references.values()]
    predicted = [hypotheses[u].strip().split(" ") for u in ids]
    stats.append(ids=ids, predict=predicted, target=tokens)
    return stats.summarize("error_rate")


def toolkit_wer(text_file: Path, hypotheses: dict[str, str], tmp_path: Path) -> float:
    checkout = os.environ.get("VPC_TOOLKIT_2024")
    if not checkout:
        return compute_wer(read_kaldi_format(text_file), hypotheses)
    spec = importlib.util.spec_from_file_location("vpc2024_data_io", Path(checkout) / "utils" / "data_io.py")
    data_io = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data_io)
    inference = Path(checkout) / "evaluation/utility/asr/speechbrain_asr/inference.py"
    source = inference.read_text().split("class InferenceSpeechBrainASR")[1]
    # compute_wer and plain_text_key as written there (the module's imports need the whole toolkit)
    namespace: dict = {"ErrorRateStats": __import__("speechbrain.utils.metric_stats").utils.metric_stats.ErrorRateStats}
    exec("class InferenceSpeechBrainASR" + source, namespace)
    cls = namespace["InferenceSpeechBrainASR"]
    self = types.SimpleNamespace(plain_text_key=lambda texts: cls.plain_text_key(None, texts))
    references = data_io.read_kaldi_format(text_file, values_as_string=True)
    stats = cls.compute_wer(self, references, hypotheses, tmp_path / "toolkit" / "wer")
    return stats.summarize("error_rate")


@pytest.fixture
def kaldi(tmp_path) -> tuple[Corpus, Corpus, Path]:
    original = make_corpus(tmp_path / "orig", speakers=2, utterances=3, seconds=0.3, seed=1, name="orig")
    anonymized = make_corpus(tmp_path / "anon", speakers=2, utterances=3, seconds=0.3, seed=2, name="anon")
    folder = tmp_path / "data" / "libri_dev_trials_f"
    folder.mkdir(parents=True)
    utts = list(original)
    (folder / "wav.scp").write_text("".join(f"{u.id} {u.path}\n" for u in utts))
    (folder / "utt2spk").write_text("".join(f"{u.id} {u.speaker}\n" for u in utts))
    lines = [f"{utts[i].id} {text}" for i, text in TEXT_LINES.items() if text is not None]
    (folder / "text").write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n   \n")  # blank lines too
    read = read_data_dir(folder)
    transcripts = [read[u.id].transcript for u in utts]
    assert transcripts == ["PLEASE CALL STELLA", "", "", "SIX SPOONS OF FRESH SNOW PEAS", None, "ASK HER"]
    anonymized = Corpus("anon", [a.replace(id=u.id, transcript=t) for a, u, t in zip(anonymized, utts, transcripts)])
    return read, anonymized, folder


def metric_for(tmp_path, texts, scripted_asr, normaliser: str, sets: list[str]) -> WER:
    from vpeval.api import PluginContext

    asr = scripted_asr(texts)
    context = PluginContext(seed=3, work_dir=tmp_path / f"work-{normaliser}", plugin_factory=lambda *a: asr)
    return WER(params=WER.Params(normaliser=normaliser, sets=sets, bootstrap=0), context=context)


def test_id_only_lines_are_scored_as_the_toolkit_scores_them(kaldi, tmp_path, scripted_asr, key_of_audio):
    original, anonymized, folder = kaldi
    texts = {key_of_audio(u.load(16000)): h for u, h in zip(original, HYPOTHESES)}
    texts |= {key_of_audio(u.load(16000)): h for u, h in zip(anonymized, HYPOTHESES)}
    metric = metric_for(tmp_path, texts, scripted_asr, "vpc2024", [str(folder)])
    rows = metric.compute(MetricInputs(original=original, anonymized=anonymized))

    hypotheses = {u.id: h for u, h in zip(original, HYPOTHESES)}
    expected = toolkit_wer(folder / "text", hypotheses, tmp_path)
    listed = read_kaldi_format(folder / "text")
    assert len(listed) == 5 and sorted(listed.values()).count("") == 2  # the two id-only lines, no blank one
    whole = [r for r in rows if r.gender == "all"]  # pooled and the set's row, for each speech
    assert len(whole) == 4
    for row in whole:
        assert row.value == pytest.approx(expected, abs=1e-9)
        assert row.details["utterances"] == 5 and row.details["empty_references_scored"] == 2
        assert row.details["skipped_empty_reference"] == 0 and row.details["skipped_no_transcript"] == 1
    # not vacuous: dropping the id-only lines (vpeval's earlier reading) gives another WER
    kept = {u: t for u, t in listed.items() if t}
    assert compute_wer(kept, hypotheses) != pytest.approx(expected)


def test_vpeval_normaliser_skips_them_and_counts_the_skip(kaldi, tmp_path, scripted_asr, key_of_audio):
    original, _, _ = kaldi
    texts = {key_of_audio(u.load(16000)): h for u, h in zip(original, HYPOTHESES)}
    metric = metric_for(tmp_path, texts, scripted_asr, "vpeval", [])
    row = metric.compute(MetricInputs(original=original))[0]
    assert row.details["skipped_empty_reference"] == 2 and row.details["skipped_no_transcript"] == 1
    assert row.details["utterances"] == 3
    assert "empty_references_scored" not in row.details
