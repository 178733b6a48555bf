"""The metric and plugin contracts for everything this package registers."""

import tempfile
from functools import cache
from pathlib import Path

import pytest

from vpeval.api import MetricInputs
from vpeval.testing.contracts import MetricContract, _Contract
from vpeval.testing.dummies import make_corpus
from vpeval.testing.realdata import real_data_root
from vpeval.types import Corpus, Utterance


@cache
def speech_inputs(anonymized: bool = True, speakers: int = 4, utterances: int = 4) -> MetricInputs:
    folder = Path(tempfile.mkdtemp(prefix="vpeval-speech-contract-"))
    original = make_corpus(folder / "orig", speakers=speakers, utterances=utterances, seconds=0.8, seed=1)
    other = make_corpus(folder / "anon", speakers=speakers, utterances=utterances, seconds=0.8, seed=2)
    return MetricInputs(original=original, anonymized=other if anonymized else None)


class TestUAR(MetricContract):
    plugin_name = "uar"
    params = {"folds": 4}

    def inputs(self):
        return speech_inputs()


class TestPitchCorrelation(MetricContract):
    plugin_name = "pitch-correlation"

    def inputs(self):
        return speech_inputs()


FSDD = real_data_root() / "fsdd" / "wav"


@pytest.mark.skipif(not FSDD.is_dir(), reason="real FSDD recordings not available")
class TestWER(MetricContract):
    plugin_name = "wer"
    params = {"asr_params": {"temperature": [0.0]}}  # no fallback retries: quick

    def inputs(self):
        # Real digits: Whisper decodes them in a fraction of a second, fake speech makes it ramble.
        utterances = [
            Utterance(name, name.split("_")[1], str(FSDD / f"{name}.flac"), transcript=word)
            for name, word in (("3_jackson_5", "three"), ("9_yweweler_3", "nine"))
        ]
        return MetricInputs(original=Corpus("fsdd", utterances))


class TestWhisperParams(_Contract):
    kind = "asr"
    plugin_name = "whisper"
    params = {"compute_type": "int8", "beam_size": 2}


def test_registration_does_not_load_heavy_modules():
    import subprocess
    import sys

    code = (
        "import sys; from vpeval_speech import plugin; found = [];"
        "plugin.register_asr(found.append); plugin.register_metrics(found.append);"
        "assert [c.name for c in found] == ['whisper', 'whisper-transformers', 'speechbrain-asr', 'wer', 'uar',"
        " 'pitch-correlation'], found;"
        "heavy = ('torch', 'faster_whisper', 'ctranslate2', 'sklearn', 'parselmouth', 'jiwer', 'speechbrain');"
        "print(sorted(x for x in heavy if x in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
