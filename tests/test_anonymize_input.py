"""The one mono-with-samples check of the anonymize task: no anonymizer is handed stereo or empty audio, and
what goes wrong is one sentence naming the file or the step that made it."""

from __future__ import annotations

import os
import re
import types

import numpy as np
import pytest
from fakes import run_anonymize_task

from vpeval import hookimpl
from vpeval.api import Anonymizer
from vpeval.errors import BadAudioError, PluginError
from vpeval.plugins import plugin_context
from vpeval.types import Utterance

SEEN: list[tuple[int, ...]] = []  # the shapes `recorder` was handed


class Recorder(Anonymizer):
    """Halves the level and notes the shape it was handed (it checks nothing itself)."""

    name = "recorder"

    def anonymize(self, audio, sample_rate, voice):
        SEEN.append(audio.shape)
        return audio * 0.5


class StereoOut(Anonymizer):
    """A broken step: returns two channels."""

    name = "stereo-out"

    def anonymize(self, audio, sample_rate, voice):
        return np.stack([audio, audio], axis=1)


class EmptyOut(Anonymizer):
    """A broken step: returns no samples."""

    name = "empty-out"

    def anonymize(self, audio, sample_rate, voice):
        return audio[:0]


class StereoUtterance(Utterance):
    """An utterance whose loader forgets to mix down (the core's reader never does)."""

    def load(self, sample_rate=None):
        audio = super().load(sample_rate)
        return np.stack([audio, audio], axis=1)


@pytest.fixture
def manager(fake_plugins):
    from vpeval.plugins import PluginManager

    module = types.ModuleType("input_check_plugins")

    def register_anonymizers(register):
        for cls in (Recorder, StereoOut, EmptyOut):
            register(cls)

    module.register_anonymizers = hookimpl(register_anonymizers)
    registry = PluginManager()
    registry.register_module(fake_plugins, "vpeval-fakes", "1.0")
    registry.register_module(module, "vpeval-input-checks", "1.0")
    assert not registry.broken, registry.broken
    SEEN.clear()
    return registry


def anonymize(manager, tmp_path, chain: list[str], utterance_class=Utterance) -> None:
    """Run the anonymize task of the chain `chain` on one utterance, u1.wav, into tmp_path / "partial"."""
    run_anonymize_task(manager, tmp_path, chain, tmp_path / "partial", utterance_class)


def test_a_good_chain_hands_every_step_mono_audio_with_samples(manager, tmp_path):
    anonymize(manager, tmp_path, ["recorder", "recorder"])
    assert SEEN == [(8000,), (8000,)]
    assert [p.name for p in (tmp_path / "partial").iterdir()] == ["u1.wav"]


@pytest.mark.parametrize(("broken", "got"), [("stereo-out", "audio of shape (8000, 2)"), ("empty-out", "no samples")])
def test_a_step_that_returns_stereo_or_nothing_is_one_sentence_the_next_never_sees(manager, tmp_path, broken, got):
    with pytest.raises(PluginError) as error:
        anonymize(manager, tmp_path, [broken, "recorder"])
    assert str(error.value) == (
        f"anonymizer {broken}'s output for utterance u1 cannot be used: it is {got}, where an anonymizer returns "
        "mono float32 audio with samples; this is a bug in vpeval-input-checks 1.0: report it to its authors."
    )
    assert SEEN == []


def test_the_last_steps_output_is_checked_before_it_is_written(manager, tmp_path):
    with pytest.raises(PluginError, match="anonymizer stereo-out's output for utterance u1 cannot be used"):
        anonymize(manager, tmp_path, ["recorder", "stereo-out"])
    assert SEEN == [(8000,)] and not any((tmp_path / "partial").iterdir())


def test_audio_that_loads_as_stereo_never_reaches_an_anonymizer(manager, tmp_path):
    with pytest.raises(BadAudioError) as error:
        anonymize(manager, tmp_path, ["recorder"], StereoUtterance)
    path = str(tmp_path / "u1.wav")
    assert str(error.value) == (
        f"Audio file {path} cannot be used: it reads as audio of shape (8000, 2), and an "
        "anonymizer takes mono audio with samples."
    )
    assert SEEN == []


def test_a_bad_audio_sentence_raised_in_a_worker_process_arrives_whole(tmp_path):
    """BadAudioError pickles by its two arguments: from a forked worker it used to end the pool instead."""

    def refuse(item):
        raise BadAudioError(f"{item}.wav", f"worker {os.getpid()} refused it")

    with pytest.raises(BadAudioError) as error:
        plugin_context(work_dir=tmp_path, workers=2).map(refuse, ["a", "b"])
    assert re.fullmatch(r"Audio file [ab]\.wav cannot be used: worker (\d+) refused it\.", str(error.value))
    assert error.value.reason != f"worker {os.getpid()} refused it"  # it came from a worker process
