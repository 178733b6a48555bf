"""The one audio gate (vpeval.audio_gate) at its three boundaries: input files (the corpus scan), what an
anonymizer returns and a submission's files (both in the anonymize task). Nothing unscorable is stored or
scored without a word, and nothing is clipped: samples are kept exact, or refused in one sentence."""

from __future__ import annotations

import types

import numpy as np
import pytest
import soundfile as sf

from vpeval import hookimpl
from vpeval.api import Anonymizer, PluginContext
from vpeval.config import load_experiment_text
from vpeval.data.scan import scan_corpus
from vpeval.errors import BadAudioError, DataError, PluginError
from vpeval.run.anonymize_task import AnonymizeTask
from vpeval.types import Corpus, Utterance
from vpeval_precomputed.anonymizer import Precomputed as Installed

RATE = 16000
SPEECH = (0.3 * np.sin(np.arange(RATE) / 5.0)).astype(np.float32)  # 1 s at 16 kHz


class Precomputed(Installed):
    """The installed class's behaviour under this test's registry (registering sets `distribution` on the class)."""


def returning(name: str, make, **declared) -> type[Anonymizer]:
    """An anonymizer class named `name` whose output is `make(audio)`, with class attributes `declared`."""
    return type(name.title(), (Anonymizer,), {"name": name, "anonymize": lambda self, a, r, v: make(a), **declared})


BROKEN = {  # a third-party anonymizer's output, and what the gate says of it
    "nan-out": (lambda a: np.where(np.arange(len(a)) == 5, np.nan, a).astype(np.float32), "1 NaN or infinite"),
    "one-sample": (lambda a: a[:1], "lasts 6.25e-05 s, shorter than the 0.1 s minimum"),
    "loud-out": (lambda a: a * 100, "peak at 30, beyond full scale (1), so every 16-bit copy would clip it"),
    "int16-out": (lambda a: (a * 32767).astype(np.int16), "it is int16 samples, where an anonymizer returns"),
    "silent-out": (np.zeros_like, "every sample is zero (digital silence)"),
    "dc-out": (lambda a: np.full_like(a, 0.25), "a constant level of 0.25 (DC) with no signal on it"),
    "long-out": (lambda a: np.tile(a, 30), "it lasts 30 s for 1 s of input (30 times), outside the 0.5 to 2 times"),
}
BAD_RATE = returning("bad-rate", lambda a: a, output_rate=lambda self, rate, voice: 1)  # a 1 Hz "declared" rate
GOOD = {
    "float-out": returning("float-out", lambda a: a * 5, output_subtype="FLOAT"),  # stored as float: kept exact
    "retimed-out": returning("retimed-out", lambda a: np.tile(a, 30), duration_band=None),
    "hears-nothing": returning("hears-nothing", np.zeros_like, silence_allowed=True),
}


@pytest.fixture
def manager(fake_plugins):
    from vpeval.plugins import PluginManager

    module = types.ModuleType("gate_plugins")
    classes = [returning(name, make) for name, (make, _) in BROKEN.items()] + [*GOOD.values(), BAD_RATE, Precomputed]

    def register_anonymizers(register):
        for cls in classes:
            register(cls)

    module.register_anonymizers = hookimpl(register_anonymizers)
    registry = PluginManager()
    registry.register_module(fake_plugins, "vpeval-fakes", "1.0")
    registry.register_module(module, "vpeval-gate-checks", "1.0")
    assert not registry.broken, registry.broken
    return {"registry": registry, "classes": {cls.name: cls for cls in classes}}


def anonymize(manager, tmp_path, use: str, params: str = "{}", instance=None):
    """The anonymize task of the one-step chain `use` on u1 (1 s of a tone); the partial folder's files."""
    text = (
        f"name: t\ndata:\n  corpus: fake-corpus\nanonymizers:\n  - {{use: {use}, params: {params}}}\n"
        "attackers: [fake-spectrum]\nmetrics: [fake-eer]\n"
    )
    anon = load_experiment_text(text, "exp.yaml", manager=manager["registry"]).anonymizers[0]
    path = tmp_path / "u1.wav"
    sf.write(path, SPEECH, RATE)
    partial = tmp_path / "partial"
    partial.mkdir(exist_ok=True)
    task = AnonymizeTask(anon, 0, 1, tmp_path / "cache", partial)
    task.remember([instance or manager["classes"][use]()])
    try:
        task(Utterance("u1", "spk", str(path), sample_rate=RATE))
    finally:
        task.forget()
    return sorted(partial.iterdir())


@pytest.mark.parametrize("use", sorted(BROKEN))
def test_a_third_party_anonymizers_unscorable_output_is_refused_not_stored(manager, tmp_path, use):
    with pytest.raises(PluginError) as error:
        anonymize(manager, tmp_path, use)
    message = str(error.value)
    assert message.startswith(f"anonymizer {use}'s output for utterance u1 cannot be used: ")
    assert BROKEN[use][1] in message and "this is a bug in vpeval-gate-checks 1.0" in message, message
    assert "\n" not in message
    assert not list((tmp_path / "partial").iterdir())  # nothing stored (NaN was stored as -32768)


def test_an_output_rate_no_audio_has_is_refused(manager, tmp_path):
    with pytest.raises(PluginError, match=r"its declared rate \(output_rate\) is 1 Hz, outside 1000 to 384000 Hz"):
        anonymize(manager, tmp_path, "bad-rate")


@pytest.mark.parametrize("use", sorted(GOOD))
def test_what_a_plugin_declares_passes_and_is_stored_exactly(manager, tmp_path, use):
    (stored,) = anonymize(manager, tmp_path, use)
    samples, rate = sf.read(stored, dtype="float32")
    expected = GOOD[use].anonymize(None, sf.read(tmp_path / "u1.wav", dtype="float32")[0], RATE, None)
    if use == "float-out":  # 1.5 peaks stored as float, not clipped
        np.testing.assert_array_equal(samples, expected)
    else:
        assert len(samples) == len(expected) and rate == RATE


def submission(tmp_path, samples: np.ndarray, subtype: str = "PCM_16") -> tuple[Precomputed, str]:
    path = tmp_path / "sub" / "u1.wav"
    path.parent.mkdir()
    sf.write(path, samples, RATE, subtype=subtype)
    manifest = tmp_path / "sub.csv"
    manifest.write_text(f"id,speaker,path\nu1,spk,{path}\n")
    anonymizer = Precomputed(Precomputed.Params(manifest=str(manifest)), PluginContext(work_dir=tmp_path / "work"))
    anonymizer.prepare()
    return anonymizer, str(manifest)


@pytest.mark.parametrize(
    ("samples", "why"),
    [
        (np.zeros(RATE, np.float32), "every sample is zero (digital silence)"),
        (SPEECH[:1], "it lasts 6.25e-05 s, shorter than the 0.1 s minimum"),
        (np.full(RATE, 0.5, np.float32), "it is a constant level of 0.5 (DC)"),
        (np.tile(SPEECH, 30), "it lasts 30 s for 1 s of input (30 times), outside the 0.25 to 4 times"),
    ],
)
def test_unscorable_submission_files_are_refused_naming_the_file(manager, tmp_path, samples, why):
    anonymizer, manifest = submission(tmp_path, samples)
    with pytest.raises(BadAudioError) as error:
        anonymize(manager, tmp_path, "precomputed", f"{{manifest: {manifest}}}", anonymizer)
    message = str(error.value)
    assert message.startswith(f"Audio file {tmp_path / 'sub' / 'u1.wav'} cannot be used: {why}"), message
    assert "(anonymizer precomputed's speech for utterance u1)" in message and "\n" not in message


def test_a_float_submission_beyond_full_scale_is_stored_as_read(manager, tmp_path):
    loud = 1.7 * SPEECH / np.abs(SPEECH).max()
    anonymizer, manifest = submission(tmp_path, loud, "FLOAT")
    (stored,) = anonymize(manager, tmp_path, "precomputed", f"{{manifest: {manifest}}}", anonymizer)
    np.testing.assert_array_equal(sf.read(stored, dtype="float32")[0], loud)


def corpus_of(tmp_path, waves: dict[str, np.ndarray]) -> Corpus:
    utts = []
    for uid, samples in waves.items():
        sf.write(tmp_path / f"{uid}.wav", samples, RATE)
        utts.append(Utterance(uid, f"s{uid}", str(tmp_path / f"{uid}.wav")))
    return Corpus("c", utts)


def test_a_dc_only_input_file_is_not_scored_as_speech(tmp_path):
    corpus = corpus_of(tmp_path, {"dc": np.full(RATE, 0.3, np.float32), "offset": SPEECH + 0.3})
    with pytest.raises(BadAudioError, match=r"dc\.wav cannot be used: it is a constant level of 0\.3 \(DC\)"):
        scan_corpus(corpus, "fail")
    kept, skipped = scan_corpus(corpus, "skip")
    assert [u.id for u in kept.utterances] == ["offset"] and [s[0] for s in skipped] == ["dc"]


def test_every_input_file_bad_says_so_not_no_utterances(tmp_path):
    corpus = corpus_of(tmp_path, {f"u{i}": np.zeros(RATE, np.float32) for i in range(16)})
    with pytest.raises(DataError) as error:
        scan_corpus(corpus, "skip")
    assert str(error.value).startswith(
        "Corpus c: all 16 utterances were skipped as bad audio (on_bad_audio: skip): 16 every sample is zero "
        f"(digital silence) (first: {tmp_path / 'u0.wav'});"
    )
