"""The CPU ASR and SER classifiers use the run's workers (issue 39, item 3): their groups (single waveforms, or
masked length buckets) run side by side as threads, and the groups, hence every text and class, are the same
whatever the number of workers."""

from __future__ import annotations

import threading
from contextlib import nullcontext

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_speech.speechbrain_asr import SpeechBrainASR
from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder, tone_noise_waves

torch = pytest.importorskip("torch")
pytest.importorskip("speechbrain")

SECONDS = (0.3, 2.1, 0.8, 1.25, 0.45, 1.9, 0.61, 1.0, 0.33, 1.6, 0.7, 1.4)


def audios(seed: int = 0) -> list[np.ndarray]:
    return tone_noise_waves(SECONDS, seed)


class Recorder:
    """Wraps a decode / classify function: the waveform groups it gets (as sets of waveform ids) and the threads
    that call it; the first two calls wait for each other, so two workers must run two at once (a single
    thread would time out)."""

    def __init__(self, func, ids: dict[int, int], together: int):
        self.func, self.ids, self.together = func, ids, together
        self.groups: list[frozenset[int]] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(together, timeout=20) if together > 1 else None

    def __call__(self, waves, *args, **kwargs):
        with self.lock:
            self.groups.append(frozenset(self.ids[id(w)] for w in (waves if isinstance(waves, list) else [waves])))
            self.threads.add(threading.get_ident())
            first = len(self.groups) <= self.together
        if first and self.barrier is not None:
            self.barrier.wait()
        return self.func(waves, *args, **kwargs)


@pytest.fixture(scope="module")
def asr_folder(tmp_path_factory):
    return tiny_encoder_asr_folder(tmp_path_factory.mktemp("asr"), norm="layer")


@pytest.mark.parametrize("cpu_batch_size", [1, 4])
def test_asr_texts_and_groups_do_not_depend_on_workers(asr_folder, tmp_path, cpu_batch_size):
    waves = audios()
    ids = {id(w): i for i, w in enumerate(waves)}
    seen = {}
    for workers in (1, 2):
        context = PluginContext(work_dir=tmp_path / f"w{workers}", workers=workers)
        asr = SpeechBrainASR(SpeechBrainASR.Params(source=str(asr_folder), cpu_batch_size=cpu_batch_size), context)
        assert asr.transcribes_many_on_cpu  # wer hands it whole chunks, in this process
        name = "decode_masked" if cpu_batch_size > 1 else "decode"
        recorder = Recorder(getattr(asr, name), ids, workers)
        setattr(asr, name, recorder)
        texts = [t.text for t in asr.transcribe_many(waves)]
        seen[workers] = (texts, sorted(recorder.groups, key=sorted), recorder.threads)
    (texts1, groups1, threads1), (texts2, groups2, threads2) = seen[1], seen[2]
    assert texts2 == texts1 and len(set(texts1)) > 1
    assert groups2 == groups1  # the same waveforms together at any core count
    assert len(groups1) == (len(waves) if cpu_batch_size == 1 else len(groups1)) and len(groups1) > 2
    assert len(threads1) == 1 and len(threads2) == 2


def test_ser_classes_and_groups_do_not_depend_on_workers(tmp_path):
    from vpeval_speech.speechbrain_emotion import load_classifier

    models = tiny_emotion_folders(tmp_path / "ser", norm="group")
    classifier = load_classifier(str(models / "fold_1"), None, str(tmp_path / "hf")).to("cpu")
    waves = audios(2)
    ids = {id(w): i for i, w in enumerate(waves)}
    original = {"classify": classifier.classify, "pooled_masked": classifier.pooled_masked}
    for batch_size, name in ((1, "classify"), (4, "pooled_masked")):
        seen = {}
        for workers in (1, 2):
            recorder = Recorder(original[name], ids, workers)
            setattr(classifier, name, recorder)
            labels = classifier.classify_many(waves, "cpu", nullcontext, batch_size, workers=workers, threads=1)
            seen[workers] = (labels, sorted(recorder.groups, key=sorted), recorder.threads)
            setattr(classifier, name, original[name])
        assert seen[2][0] == seen[1][0] == [classifier.classify(w, "cpu", nullcontext) for w in waves]
        assert seen[2][1] == seen[1][1] and len(seen[1][1]) > 2
        assert len(seen[1][2]) == 1 and len(seen[2][2]) == 2
