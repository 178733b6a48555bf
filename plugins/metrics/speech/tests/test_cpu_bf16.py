"""`cpu_precision: bf16` on the speech metrics' CPU paths (issue 39, item 5): the wav2vec2-CTC ASR and the SER
classifier run under the run's CPU autocast (PluginContext.autocast), their CNN as bf16 matrix products
(vpeval_torch.ssl_masked.time_major_cnn), and agree with fp32 on most outputs.

Tolerances, stated: these are random tiny models whose CTC logits are often nearly tied, so bf16's rounding
(8 bits of mantissa) flips some frames' greedy choice. Measured on the 30 waveforms here: character error rate
of the bf16 transcripts against the fp32 ones 2.0-2.2 % overall, at most 7.2 % for one utterance, with nearly
every transcript differing somewhere; 29-30 of 30 classes equal. The tests allow 5 % overall, 15 % for any one
utterance and 3 of 30 classes. What they do not show: how far released weights move (their logits are far from
ties, so fewer flips are expected, not measured here)."""

from __future__ import annotations

import jiwer
import pytest

from vpeval.api import PluginContext
from vpeval_speech.speechbrain_asr import SpeechBrainASR
from vpeval_speech.speechbrain_emotion import load_classifier
from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder

torch = pytest.importorskip("torch")
pytest.importorskip("speechbrain")


def waveforms():
    from test_masked_batches import audios  # noqa: PLC0415 - the sibling module's waveforms (importlib mode)

    return audios(0) + audios(1) + audios(2)


@pytest.fixture
def cnn_calls(monkeypatch) -> list[int]:
    """Counts time_major_cnn's calls: the bf16 CNN runs only where the caller entered CPU autocast."""
    import vpeval_torch.ssl_masked as masked

    calls, real = [], masked.time_major_cnn
    monkeypatch.setattr(masked, "time_major_cnn", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    return calls


@pytest.mark.parametrize(("norm", "batch"), [("layer", 1), ("group", 4)])  # one at a time (default), masked
def test_asr_transcripts_in_bf16_stay_close_to_fp32(norm, batch, tmp_path, cnn_calls, monkeypatch):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    folder = tiny_encoder_asr_folder(tmp_path / "asr", norm=norm)
    waves = waveforms()
    texts = {}
    for precision in ("fp32", "bf16"):
        context = PluginContext(work_dir=tmp_path / precision, precision=precision)
        asr = SpeechBrainASR(SpeechBrainASR.Params(source=str(folder), cpu_batch_size=batch), context)
        texts[precision] = [t.text for t in asr.transcribe_many(waves)]
        assert len(cnn_calls) == (0 if precision == "fp32" else len(waves))  # fp32: transformers' own CNN
    assert all(texts["fp32"]) and len(set(texts["fp32"])) > 20  # random weights, yet texts that differ
    assert texts["bf16"] != texts["fp32"]  # bf16 did run
    assert jiwer.cer(texts["fp32"], texts["bf16"]) < 0.05
    assert max(jiwer.cer(a, b) for a, b in zip(texts["fp32"], texts["bf16"])) < 0.15


@pytest.mark.parametrize(("norm", "batch"), [("layer", 1), ("group", 4)])
def test_ser_classes_in_bf16_mostly_equal_fp32(norm, batch, tmp_path, cnn_calls, monkeypatch):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    classifier = load_classifier(str(tiny_emotion_folders(tmp_path / "ser", norm=norm) / "fold_1"), None, "")
    waves = waveforms()
    classes = {
        p: classifier.classify_many(waves, "cpu", PluginContext(precision=p).autocast, batch) for p in ("fp32", "bf16")
    }
    assert len(cnn_calls) == len(waves)  # the bf16 pass only
    assert sum(a != b for a, b in zip(classes["fp32"], classes["bf16"])) <= 3
