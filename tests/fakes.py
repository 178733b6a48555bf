"""Small but real plugins for core tests: they do honest work on the dummy corpus, quickly.

- `fake-shift`: anonymizer that shifts pitch and formants by resampling (factor drawn per voice).
- `fake-spectrum`: attacker on mean log band energies with a global mean removed.
- `fake-inverter`: fake-spectrum that also returns recovered and target vectors (inversion).
- `fake-eer`: a sort-based EER metric; `fake-cosine`: mean cosine of recovered and target vectors.
- `fake-corpus`: corpus source that writes the dummy corpus.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field

from vpeval import hookimpl
from vpeval.api import Anonymizer, Attacker, CorpusSource, Metric, MetricInputs, Params, Voice
from vpeval.errors import MetricInputError
from vpeval.stats import eer
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus, MetricResult, TrainingData, Utterance

# The runner tests' experiment: every fake plugin, two attackers, three protocols, two enrolment sizes.
EXPERIMENT = """\
name: runner-test
seed: 7
data:
  corpus: {use: fake-corpus, params: {speakers: 12, utterances: 6}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 3
  nontarget_trials_per_speaker: 3
anonymizers:
  - {use: fake-shift}
attackers:
  - {use: fake-spectrum, train_on: original}
  - {use: fake-spectrum, train_on: semi-informed, params: {bands: 24}}
protocols: [O-O, O-A, A-A]
enroll_utterances: [1, 2]
metrics: [fake-eer]
"""

CALLS = {"anonymize": 0, "train": 0}


class FakeShift(Anonymizer):
    """Moves pitch and formants together by a factor drawn per voice (resampling)."""

    name = "fake-shift"

    class Params(Params):
        low: float = Field(default=1.3, gt=0)
        high: float = Field(default=1.6, gt=0)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        CALLS["anonymize"] += 1
        factor = voice.rng.uniform(self.params.low, self.params.high)
        positions = np.arange(len(audio)) * factor
        shifted = np.interp(positions % len(audio), np.arange(len(audio)), audio)
        return shifted.astype(np.float32)


class FakeSpectrum(Attacker):
    """Histogram of frame pitch estimates (log-F0 bins), minus the training mean, cosine scoring."""

    name = "fake-spectrum"

    class Params(Params):
        bands: int = Field(default=32, ge=2, description="log-F0 histogram bins between 70 and 400 Hz")

    def train(self, data: TrainingData) -> None:
        CALLS["train"] += 1
        self._mean = np.mean([self._vector(u) for u in data.corpus], axis=0)
        start = getattr(self, "_start", None)
        if start is not None:  # "fine-tuning": move half-way from the starting model
            self._mean = (self._mean + start) / 2
            CALLS["fine_tuned"] = CALLS.get("fine_tuned", 0) + 1

    def init_from(self, folder: Path) -> None:
        self._start = np.load(Path(folder) / "mean.npy", allow_pickle=False)

    def save(self, folder: Path) -> None:
        np.save(Path(folder) / "mean.npy", self._mean)

    def load(self, folder: Path) -> None:
        self._mean = np.load(Path(folder) / "mean.npy", allow_pickle=False)

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.mean([self._vector(u) for u in utterances], axis=0) - self._mean

    def _vector(self, utterance: Utterance) -> np.ndarray:
        rate = self.sample_rate
        audio = utterance.load(rate)
        frames = np.lib.stride_tricks.sliding_window_view(audio, 640)[::320]
        spec = np.fft.rfft(frames * np.hanning(640), n=1280, axis=1)
        ac = np.fft.irfft(np.abs(spec) ** 2, axis=1)[:, : rate // 70]
        lo = rate // 400
        lag = lo + np.argmax(ac[:, lo:], axis=1)
        f0 = rate / lag
        edges = np.geomspace(70, 400, self.params.bands + 1)
        hist = np.histogram(f0, bins=edges)[0].astype(float)
        hist = np.convolve(hist, [0.25, 0.5, 0.25], mode="same")
        return hist / max(hist.sum(), 1.0)


class FakeInverter(FakeSpectrum):
    """fake-spectrum that also "recovers" each utterance's vector, as an inversion attacker would."""

    name = "fake-inverter"

    def inversion_embeddings(self, corpus: Corpus, reference: Corpus | None = None):
        reference = corpus if reference is None else reference
        recovered = np.stack([self.represent([u]) for u in corpus.utterances])
        target = np.stack([self.represent([reference[u.id]]) for u in corpus.utterances])
        return recovered, target, np.array([u.speaker for u in corpus.utterances])


class FakeCosine(Metric):
    """Mean cosine of recovered and target embeddings (an `inversion`-like metric)."""

    name = "fake-cosine"
    needs = "embeddings"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        r, t = inputs.recovered, inputs.target
        cos = np.sum(r * t, axis=1) / np.maximum(np.linalg.norm(r, axis=1) * np.linalg.norm(t, axis=1), 1e-12)
        return [MetricResult("fake-cosine", float(cos.mean()), details={"rows": len(r)})]


class FakeEER(Metric):
    """EER in % from a sort (pooled and per gender)."""

    name = "fake-eer"
    needs = "scores"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        s = inputs.scores
        if s is None or s.targets.all() or not s.targets.any():
            raise MetricInputError("fake-eer needs target and non-target trials.")
        out = [MetricResult("fake-eer", 100 * eer(s.scores, s.targets), "all", unit="%")]
        if s.genders is not None:
            for g in ("f", "m"):
                m = s.genders == g
                if s.targets[m].any() and (~s.targets[m]).any():
                    out.append(MetricResult("fake-eer", 100 * eer(s.scores[m], s.targets[m]), g, unit="%"))
        return out


class FakeSeparation(Metric):
    """Mean same-speaker minus mean different-speaker score of the similarity matrices."""

    name = "fake-separation"
    needs = "similarity"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        out = []
        for protocol, m in sorted(inputs.similarity.items()):
            same = m.row_speakers[:, None] == m.col_speakers[None, :]
            assert m.scores.shape == same.shape and m.row_ids is not None
            value = float(m.scores[same].mean() - m.scores[~same].mean())
            out.append(MetricResult("fake-separation", value, details={"matrix": protocol}))
        return out


def log_spectral_distances(inputs: MetricInputs) -> list[float]:
    """Each anonymized utterance's mean log-spectral distance (dB) to its original: the report tests' stand-in
    for a utility metric (0 for the original speech)."""
    distances = []
    for u in inputs.original:
        a, b = u.load(16000), inputs.anonymized[u.id].load(16000)
        n = min(len(a), len(b))
        spec_a, spec_b = (np.log10(np.abs(np.fft.rfft(x[:n])) + 1e-6) for x in (a, b))
        distances.append(float(20 * np.mean(np.abs(spec_a - spec_b))))
    return distances


def run_anonymize_task(manager, tmp_path: Path, chain: list[str], partial: Path, utterance=Utterance, **task_options):
    """The anonymize task of the anonymizer chain `chain` (registered names) run on one utterance, u1 (its input
    tmp_path / u1.wav, a 16 kHz tone), into the folder `partial`; returns the file it wrote there. The tests of
    the task's input checks and of the throwaway cache's links build on it."""
    import soundfile as sf

    from vpeval.config import load_experiment_text
    from vpeval.run.anonymize_task import AnonymizeTask

    steps = ", ".join(f"{{use: {name}}}" for name in chain)
    text = (
        f"name: t\ndata:\n  corpus: fake-corpus\nanonymizers:\n  - {{chain: [{steps}]}}\n"
        "attackers: [fake-spectrum]\nmetrics: [fake-eer]\n"
    )
    anon = load_experiment_text(text, "exp.yaml", manager=manager).anonymizers[0]
    source = tmp_path / "u1.wav"
    sf.write(source, 0.1 * np.sin(np.arange(8000) / 5.0), 16000)
    partial.mkdir(exist_ok=True)
    task = AnonymizeTask(anon, 0, 1, tmp_path / "cache", partial, **task_options)
    task.remember([manager.get("anonymizer", name)() for name in chain])
    try:
        task(utterance("u1", "spk", str(source), sample_rate=16000))
    finally:
        task.forget()
    return partial / "u1.wav"


class FakeCorpus(CorpusSource):
    """The dummy harmonic corpus, written under the plugin's work folder."""

    name = "fake-corpus"

    class Params(Params):
        speakers: int = 12
        utterances: int = 6

    def load(self) -> Corpus:
        # Written into a temporary folder and renamed into place once: a run reading the audio never sees
        # another run's load rewrite it (tests start several runs on one cache).
        name = f"{self.params.speakers}x{self.params.utterances}"
        final = self.context.folder("audio") / name
        tmp = self.context.folder("audio", f".{name}.{os.getpid()}")
        corpus = make_corpus(tmp, self.params.speakers, self.params.utterances, seconds=0.6, seed=3, name="fake")
        try:
            os.replace(tmp, final)
        except OSError:  # already in place
            shutil.rmtree(tmp)
        utterances = [u.replace(path=str(final / Path(u.path).name)) for u in corpus.utterances]
        return Corpus(corpus.name, utterances, dict(corpus.speaker_gender), fingerprint=corpus.fingerprint)


@hookimpl
def register_anonymizers(register):
    register(FakeShift)


@hookimpl
def register_attackers(register):
    register(FakeSpectrum)
    register(FakeInverter)


@hookimpl
def register_metrics(register):
    register(FakeEER)
    register(FakeSeparation)
    register(FakeCosine)


@hookimpl
def register_corpora(register):
    register(FakeCorpus)
