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
from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder, tone_noise_waves

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


@pytest.fixture
def without_cast_once(monkeypatch):
    """Loads with autocast's own per-call weight casts (vpeval_torch.autocast_copies off), fresh loader caches
    around the test so neither kind of model outlives it. Rows keep their own counts in both arms (no
    shape_buckets padding, which may round differently): what is compared is the casts alone."""
    import vpeval_torch.autocast_copies as copies
    import vpeval_torch.shape_buckets as buckets
    from vpeval_speech.speechbrain_asr import load_asr

    monkeypatch.setattr(buckets, "bucket_rows", lambda rows: rows)

    def off():
        monkeypatch.setattr(copies, "weights_under_autocast", lambda module: None)
        load_asr.cache_clear(), load_classifier.cache_clear()

    load_asr.cache_clear(), load_classifier.cache_clear()
    yield off
    load_asr.cache_clear(), load_classifier.cache_clear()


CAST_ONCE_SECONDS = (1.0, 2.5, 0.7, 1.6, 3.0, 1.2)


def linears(module) -> list:
    return [m for m in module.modules() if type(m) is torch.nn.Linear]


def test_asr_weights_cast_once_same_bf16_outputs(tmp_path, without_cast_once):
    """bf16 with the weights cast once per loaded model: encoder outputs and texts bit for bit those of
    autocast's per-utterance casts; fp32 texts unchanged by them."""
    folder = tiny_encoder_asr_folder(tmp_path / "asr", norm="layer")
    waves = tone_noise_waves(CAST_ONCE_SECONDS)
    runs = {}
    for cast_once in (True, False):
        if not cast_once:
            without_cast_once()
        out = {}
        for precision in ("fp32", "bf16"):
            context = PluginContext(work_dir=tmp_path / f"{precision}-{cast_once}", precision=precision)
            asr = SpeechBrainASR(SpeechBrainASR.Params(source=str(folder)), context)
            out[precision] = [t.text for t in asr.transcribe_many(waves)]
            with torch.no_grad(), context.autocast():
                out[f"{precision} encoded"] = asr.parts().encoder(torch.from_numpy(waves[0])[None], torch.ones(1))
        encoder = asr.parts().encoder
        assert all(getattr(m, "autocast_copies", False) == cast_once for m in linears(encoder))
        made = [m for m in linears(encoder) if "_autocast_copies" in m.__dict__]
        assert len(made) == (len(linears(encoder)) if cast_once else 0)  # made by the bf16 run, kept
        runs[cast_once] = out
    assert not torch.equal(runs[True]["bf16 encoded"], runs[True]["fp32 encoded"])  # bf16 did run
    for key in ("fp32 encoded", "bf16 encoded"):
        assert torch.equal(runs[True][key], runs[False][key])
    assert runs[True]["bf16"] == runs[False]["bf16"] and runs[True]["fp32"] == runs[False]["fp32"]


def test_ser_weights_cast_once_same_bf16_outputs(tmp_path, without_cast_once):
    """The same for the SER classifier: its probabilities (wav2vec2, pooling, the linear head) and classes."""
    folder = str(tiny_emotion_folders(tmp_path / "ser", norm="group") / "fold_1")
    waves = tone_noise_waves(CAST_ONCE_SECONDS)
    runs = {}
    for cast_once in (True, False):
        if not cast_once:
            without_cast_once()
        classifier = load_classifier(folder, None, "")
        out = {}
        for precision in ("fp32", "bf16"):
            autocast = PluginContext(precision=precision).autocast
            torch.manual_seed(0)  # StatisticsPooling adds Gaussian noise (1e-5) to the mean: the same noise
            out[precision] = classifier.classify_many(waves, "cpu", autocast)
            torch.manual_seed(0)
            with torch.no_grad(), autocast():
                hidden = classifier.wav2vec2(torch.from_numpy(waves[0])[None])
                pooled = classifier.avg_pool(hidden.float(), torch.ones(1)).view(1, -1)
                out[f"{precision} probabilities"] = classifier.softmax(classifier.output_mlp(pooled))
        parts = [*linears(classifier.wav2vec2), *linears(classifier.output_mlp)]
        assert parts and all(getattr(m, "autocast_copies", False) == cast_once for m in parts)
        runs[cast_once] = out
    for key in ("fp32", "bf16", "fp32 probabilities", "bf16 probabilities"):
        assert (
            runs[True][key] == runs[False][key]
            if isinstance(runs[True][key], list)
            else (torch.equal(runs[True][key], runs[False][key]))
        )
