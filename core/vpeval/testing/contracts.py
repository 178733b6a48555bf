"""Contract suites: the behaviour every plugin of a kind promises, as pytest test classes to subclass.

Each suite checks discovery through entry points, the Params contract (defaults validate, unknown
fields are refused, values round-trip), that importing the plugin loads no heavy library, and the
kind's own promises (shapes, sample rates, determinism under the seed, save/load).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from pydantic import ValidationError

from vpeval.api import (
    Anonymizer,
    Attacker,
    CorpusSource,
    Frontend,
    MetricInputs,
    SpeakerEncoder,
    Transcript,
    Voice,
)
from vpeval.errors import MetricInputError
from vpeval.params import round_trip_problem, validate_params
from vpeval.plugins import LOAD_ENV, plugin_context
from vpeval.settings import PlanSettings
from vpeval.testing.dummies import make_corpus, speaker_voice, synthesize
from vpeval.types import Corpus, EvaluationPlan, FrontendOutput, MetricResult, Scores, TrainingData, TrainingStage

# Libraries that take seconds to import or pull in GPU runtimes: a plugin imports them in methods.
HEAVY_MODULES = ("torch", "transformers", "speechbrain", "faster_whisper", "ctranslate2", "parselmouth")


def heavy_modules_after_import(module: str, kind: str, name: str, distribution: str) -> list[str]:
    """Heavy libraries loaded in a fresh interpreter by importing `module` and registering its plugin."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "from vpeval.plugins import get_plugin_manager\n"
        f"get_plugin_manager().get({kind!r}, {name!r})\n"
        f"print(json.dumps(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules)))\n"
    )
    env = {**os.environ, LOAD_ENV: distribution}  # only this plugin's distribution registers
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class _Contract:
    kind: ClassVar[str] = ""
    plugin_name: ClassVar[str] = ""
    params: ClassVar[dict[str, Any]] = {}
    seed: ClassVar[int] = 0

    def plugin_class(self):
        from vpeval.plugins import get_plugin_manager

        return get_plugin_manager().get(self.kind, self.plugin_name)

    def make(self, tmp_path: Path, seed: int | None = None, **overrides):
        cls = self.plugin_class()
        params = validate_params(cls, {**self.params, **overrides})  # strictly, as a run builds it
        context = plugin_context(seed=self.seed if seed is None else seed, work_dir=Path(tmp_path) / "work")
        return cls(params, context)

    def test_discovered_through_entry_points(self):
        from vpeval.plugins import get_plugin_manager

        cls = self.plugin_class()
        assert cls.name == self.plugin_name
        assert cls.kind == self.kind
        registered = get_plugin_manager().registry[self.kind][self.plugin_name]
        assert registered.distribution, "a plugin must come from an installed distribution"

    def test_params_validate_and_round_trip(self):
        """validate(dump(validate(params))) == validate(params), strictly, as resolve and the runner
        read them (resolved.yaml holds the dump), for the suite's params and for the defaults."""
        cls = self.plugin_class()
        params = validate_params(cls, self.params)
        again = validate_params(cls, params.model_dump(mode="json"))
        assert again == params
        assert round_trip_problem(cls, params) is None
        try:
            defaults = validate_params(cls, {})
        except ValidationError:  # a required field: the suite's params cover it
            defaults = None
        if defaults is not None:
            assert round_trip_problem(cls, defaults) is None
        with pytest.raises(ValidationError):
            validate_params(cls, {**self.params, "no_such_parameter_xyz": 1})

    def test_import_is_light(self):
        """Heavy dependencies load on use: importing and registering the plugin, in a fresh interpreter,
        loads none of HEAVY_MODULES (so `vpeval plugins` and `vpeval validate` stay fast)."""
        cls = self.plugin_class()
        assert cls.__doc__, f"{cls.__name__} needs a docstring: `vpeval describe` shows it"
        heavy = heavy_modules_after_import(cls.__module__, self.kind, self.plugin_name, cls.distribution)
        assert heavy == [], f"importing {cls.__module__} loads {heavy}; import them inside methods"


def _audio(sample_rate: int, seconds: float = 1.0, speaker: int = 0, seed: int = 0) -> np.ndarray:
    return synthesize(speaker_voice(speaker), seconds, sample_rate, np.random.default_rng([seed, speaker]))


class AnonymizerContract(_Contract):
    kind = "anonymizer"
    embedding_dim: ClassVar[int] = 16

    def _rate(self) -> int:
        return self.plugin_class().sample_rate or 16000

    def _prepared(self, tmp_path, **kw) -> Anonymizer:
        anonymizer = self.make(tmp_path, **kw)
        anonymizer.prepare()
        return anonymizer

    def test_waveform_shape_rate_and_change(self, tmp_path):
        cls = self.plugin_class()
        if "waveform" not in cls.works_on:
            pytest.skip("works on embeddings only")
        rate = self._rate()
        audio = _audio(rate)
        out = self._prepared(tmp_path).anonymize(audio.copy(), rate, Voice("u1", "utterance", np.random.default_rng(1)))
        assert out.dtype == np.float32 and out.ndim == 1
        assert len(out) == len(audio), "anonymized audio keeps the input length"
        assert np.isfinite(out).all()
        assert not np.allclose(out, audio), "anonymized audio must differ from the input"

    def test_waveform_deterministic_per_voice(self, tmp_path):
        cls = self.plugin_class()
        if "waveform" not in cls.works_on:
            pytest.skip("works on embeddings only")
        rate = self._rate()
        audio = _audio(rate)
        first = self._prepared(tmp_path / "a").anonymize(
            audio.copy(), rate, Voice("k", "speaker", np.random.default_rng(5))
        )
        second = self._prepared(tmp_path / "b").anonymize(
            audio.copy(), rate, Voice("k", "speaker", np.random.default_rng(5))
        )
        np.testing.assert_array_equal(first, second)

    def test_embeddings_shape_and_determinism(self, tmp_path):
        cls = self.plugin_class()
        if "embedding" not in cls.works_on:
            pytest.skip("works on waveforms only")
        x = self.sample_embeddings()
        voices = [Voice(f"s{i}", "speaker", np.random.default_rng(i)) for i in range(len(x))]
        out = self._prepared(tmp_path / "a").anonymize_embeddings(x.copy(), voices)
        assert out.shape == x.shape and np.isfinite(out).all()
        voices = [Voice(f"s{i}", "speaker", np.random.default_rng(i)) for i in range(len(x))]
        again = self._prepared(tmp_path / "b").anonymize_embeddings(x.copy(), voices)
        np.testing.assert_allclose(out, again, rtol=1e-6, atol=1e-6)
        assert not np.allclose(out, x)

    def sample_embeddings(self) -> np.ndarray:
        return np.random.default_rng(0).normal(size=(8, self.embedding_dim)).astype(np.float32)


class AttackerContract(_Contract):
    kind = "attacker"
    frontend_name: ClassVar[str | None] = None
    frontend_params: ClassVar[dict[str, Any]] = {}
    corpus_kwargs: ClassVar[dict[str, Any]] = {"speakers": 6, "utterances": 4, "seconds": 1.0}

    def _attacker(self, tmp_path: Path, train) -> Attacker:
        attacker = self.make(tmp_path)
        if self.frontend_name:
            from vpeval.plugins import get_plugin_manager

            fcls = get_plugin_manager().get("frontend", self.frontend_name)
            frontend = fcls(
                validate_params(fcls, self.frontend_params), plugin_context(seed=self.seed, work_dir=tmp_path / "fe")
            )
            frontend.fit(train)
            attacker.frontend = frontend
        return attacker

    def _data(self, tmp_path: Path):
        corpus = make_corpus(tmp_path / "audio", sample_rate=self.plugin_class().sample_rate, **self.corpus_kwargs)
        return corpus

    def test_train_represent_score_save_load(self, tmp_path):
        corpus = self._data(tmp_path)
        attacker = self._attacker(tmp_path / "one", corpus)
        if attacker.needs_training:
            attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))
        by_speaker = list(corpus.by_speaker().values())
        sides = [by_speaker[0][:2], by_speaker[0][2:4], by_speaker[1][:1]]
        vectors = attacker.represent_many(sides)
        assert vectors.ndim == 2 and vectors.shape[0] == 3 and np.isfinite(vectors).all()
        scores = attacker.score(vectors[[0, 0]], vectors[[1, 2]])
        assert np.asarray(scores).shape == (2,) and np.isfinite(scores).all()
        (tmp_path / "saved").mkdir()
        attacker.save(tmp_path / "saved")
        restored = self._attacker(tmp_path / "two", corpus)
        restored.load(tmp_path / "saved")
        np.testing.assert_allclose(restored.represent_many(sides), vectors, rtol=1e-5, atol=1e-6)

    def test_training_is_deterministic(self, tmp_path):
        corpus = self._data(tmp_path)
        sides = [[u] for u in corpus.utterances[:3]]
        outs = []
        for name in ("a", "b"):
            attacker = self._attacker(tmp_path / name, corpus)
            if attacker.needs_training:
                attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))
            outs.append(attacker.represent_many(sides))
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


class FrontendContract(_Contract):
    kind = "frontend"
    fits: ClassVar[bool] = False  # True when fit() learns codebooks from data
    frame_tolerance: ClassVar[int] = 3

    def _frontend(self, tmp_path: Path) -> Frontend:
        frontend = self.make(tmp_path / "fe")
        if self.fits:
            frontend.fit(make_corpus(tmp_path / "audio", speakers=2, utterances=2, sample_rate=frontend.sample_rate))
        return frontend

    def test_encode_shapes_and_rate(self, tmp_path):
        frontend = self._frontend(tmp_path)
        seconds = 2.0
        out = frontend.encode(_audio(frontend.sample_rate, seconds))
        assert isinstance(out, FrontendOutput)
        assert out.frame_rate == pytest.approx(frontend.frame_rate)
        frames = out.tokens.shape[0] if out.tokens is not None else out.features.shape[0]
        assert abs(frames - seconds * frontend.frame_rate) <= self.frame_tolerance
        if out.tokens is not None:
            assert out.tokens.dtype.kind == "i"
            assert (out.tokens >= 0).all() and (out.tokens < np.array(out.codebook_sizes)).all()
        if out.features is not None:
            assert out.features.shape[0] == frames and np.isfinite(out.features).all()

    def test_deterministic_and_save_load(self, tmp_path):
        audio = _audio(self.plugin_class().sample_rate, 1.5)
        first = self._frontend(tmp_path / "a")
        second = self._frontend(tmp_path / "b")
        a, b = first.encode(audio), second.encode(audio)
        for x, y in ((a.tokens, b.tokens), (a.features, b.features)):
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
        (tmp_path / "saved").mkdir()
        first.save(tmp_path / "saved")
        third = self.make(tmp_path / "c")
        third.load(tmp_path / "saved")
        c = third.encode(audio)
        if a.tokens is not None:
            np.testing.assert_array_equal(a.tokens, c.tokens)


def random_scores(seed: int = 0, speakers: int = 20, trials_per_speaker: int = 40, separation: float = 1.5) -> Scores:
    """Gaussian target/non-target scores with genders and speakers, for metric contracts."""
    rng = np.random.default_rng(seed)
    spk = np.repeat([f"s{i}" for i in range(speakers)], trials_per_speaker)
    genders = np.repeat(["f" if i % 2 == 0 else "m" for i in range(speakers)], trials_per_speaker)
    targets = rng.random(len(spk)) < 0.3
    targets[::trials_per_speaker] = True
    targets[1::trials_per_speaker] = False
    scores = rng.normal(size=len(spk)) + separation * targets
    return Scores(scores, targets, genders, spk, spk)


class MetricContract(_Contract):
    kind = "metric"

    def inputs(self) -> MetricInputs:
        """Override for metrics that need speech, similarity matrices or embeddings."""
        return MetricInputs(scores=random_scores())

    def test_results_are_finite_and_deterministic(self, tmp_path):
        first = self.make(tmp_path / "a").compute(self.inputs())
        second = self.make(tmp_path / "b").compute(self.inputs())
        assert first and all(isinstance(r, MetricResult) for r in first)
        assert all(np.isfinite(r.value) for r in first)
        # the report section's `metric:` is checked against these names when the experiment loads
        undeclared = sorted({r.metric for r in first} - set(self.plugin_class().result_names()))
        assert not undeclared, f"results named {undeclared}: list every result name in the class's result_metrics"
        assert [(r.metric, r.gender, r.value, r.ci_low, r.ci_high) for r in first] == [
            (r.metric, r.gender, r.value, r.ci_low, r.ci_high) for r in second
        ]

    def test_one_class_only_is_a_clear_error(self, tmp_path):
        if self.plugin_class().needs != "scores":
            pytest.skip("not a score metric")
        s = random_scores()
        with pytest.raises(MetricInputError):
            self.make(tmp_path).compute(MetricInputs(scores=s.select(s.targets)))


class EncoderContract(_Contract):
    kind = "encoder"

    def _encoder(self, tmp_path) -> SpeakerEncoder:
        return self.make(tmp_path)

    def test_embed_shape_and_determinism(self, tmp_path):
        encoder = self._encoder(tmp_path / "a")
        audio = _audio(encoder.sample_rate, 2.0)
        x = encoder.embed(audio)
        assert x.ndim == 1 and np.isfinite(x).all()
        if encoder.dim:
            assert x.shape[0] == encoder.dim
        np.testing.assert_allclose(self._encoder(tmp_path / "b").embed(audio), x, rtol=1e-5, atol=1e-6)


class CorpusContract(_Contract):
    """A corpus source: a non-empty, well-labelled corpus with readable audio, the same on every load,
    and an evaluation plan (if it brings one) whose pools and trials stay inside the corpus.

    Sources that read files override `source_params(tmp_path)` to write them and return real params;
    `params` then only needs to validate.
    """

    kind = "corpus"
    audio_checked_per_speaker: ClassVar[int] = 1  # reading every file of a large corpus would be slow

    def source_params(self, tmp_path: Path) -> dict[str, Any]:
        return dict(self.params)

    def _source(self, tmp_path: Path, work: str = "work") -> CorpusSource:
        cls = self.plugin_class()
        params = validate_params(cls, self.source_params(tmp_path))
        return cls(params, plugin_context(seed=self.seed, work_dir=Path(tmp_path) / work))

    def test_load_gives_labelled_readable_speech(self, tmp_path):
        corpus = self._source(tmp_path).load()
        assert isinstance(corpus, Corpus) and len(corpus) > 0, "a corpus source loads at least one utterance"
        assert corpus.fingerprint, "the cache keys on the corpus fingerprint: set it (vpeval.data.fingerprint)"
        assert len(corpus.speakers) >= 2, "speaker verification needs at least two speakers"
        for u in corpus.utterances:
            assert u.id and not re.search(r"\s", u.id), f"utterance id {u.id!r} is empty or has white space"
            assert u.speaker and not re.search(r"\s", u.speaker), (
                f"speaker {u.speaker!r} of {u.id} is empty or has white space"
            )
            assert u.gender in (None, "f", "m"), f"gender of {u.id} is {u.gender!r}, not f, m or None"
            assert u.sample_rate is None or u.sample_rate > 0
            assert Path(u.path).is_file(), f"{u.id}: {u.path} is not a file"
        for utterances in corpus.by_speaker().values():
            for u in utterances[: self.audio_checked_per_speaker]:
                audio = u.load()
                assert audio.dtype == np.float32 and audio.ndim == 1 and len(audio) > 0 and np.isfinite(audio).all()

    def test_load_is_deterministic(self, tmp_path):
        first = self._source(tmp_path, "a").load()
        second = self._source(tmp_path, "b").load()
        assert [(u.id, u.speaker, u.gender) for u in first] == [(u.id, u.speaker, u.gender) for u in second]
        assert first.fingerprint == second.fingerprint

    def test_evaluation_plan_is_none_or_inside_the_corpus(self, tmp_path):
        source = self._source(tmp_path)
        corpus = source.load()
        plan = source.evaluation_plan(corpus, PlanSettings())
        if plan is None:
            return
        assert isinstance(plan, EvaluationPlan)
        assert not set(plan.enroll_ids) & set(plan.test_ids), "an utterance is both enrollment and trial"
        assert set(plan.enroll_ids) | set(plan.test_ids) <= {u.id for u in plan.evaluation}
        assert not set(plan.train.speakers) & set(plan.evaluation.speakers), (
            "attacker training sees evaluation speakers"
        )
        for trials in plan.trial_lists.values():
            for t in trials.trials:
                assert set(t.enroll) <= set(plan.enroll_ids) and set(t.test) <= set(plan.test_ids)


class ASRContract(_Contract):
    """A speech recognizer: a Transcript with text and time-ordered words inside the audio, the same
    text on every call, silence without an error, and (where the plugin gives one) a recording read right.
    """

    kind = "asr"

    def recording(self) -> tuple[np.ndarray, str] | None:
        """Override: mono float32 speech at the plugin's sample rate and its words, to check accuracy."""
        return None

    def _speech(self) -> np.ndarray:
        given = self.recording()
        return given[0] if given is not None else _audio(self.plugin_class().sample_rate, 1.5)

    def test_transcript_is_well_formed(self, tmp_path):
        asr = self.make(tmp_path)
        audio = self._speech()
        out = asr.transcribe(audio)
        assert isinstance(out, Transcript) and isinstance(out.text, str)
        seconds = len(audio) / asr.sample_rate
        starts = [start for _, start, _ in out.words]
        assert starts == sorted(starts), "words are in time order"
        for word, start, end in out.words:
            assert isinstance(word, str) and 0.0 <= start <= end <= seconds + 0.5, (word, start, end)

    def test_same_audio_same_text(self, tmp_path):
        audio = self._speech()
        assert self.make(tmp_path / "a").transcribe(audio).text == self.make(tmp_path / "b").transcribe(audio).text

    def test_silence_is_not_an_error(self, tmp_path):
        asr = self.make(tmp_path)
        out = asr.transcribe(np.zeros(asr.sample_rate // 2, dtype=np.float32))
        assert isinstance(out, Transcript) and isinstance(out.text, str)

    def test_reads_a_recording(self, tmp_path):
        given = self.recording()
        if given is None:
            pytest.skip("the plugin's tests give no recording with its words")
        audio, words = given

        def norm(text: str) -> str:
            return " ".join(re.sub(r"[^a-z0-9' ]", " ", text.lower()).split())

        assert norm(self.make(tmp_path).transcribe(audio).text) == norm(words)


class ExecutorContract(_Contract):
    """An executor: func(item) for every item exactly once (in any order), and close() without error."""

    kind = "executor"

    def test_map_runs_every_item_once(self, tmp_path):
        executor = self.make(tmp_path)
        try:
            out = list(executor.map(_square_of_index, [(i, i) for i in range(7)], "contract"))
        finally:
            executor.close()
        assert sorted(out) == [(i, i * i) for i in range(7)]


def _square_of_index(pair: tuple[int, int]) -> tuple[int, int]:
    return pair[0], pair[1] * pair[1]


class ReportContract(_Contract):
    """A report plugin: each method returns its documented type or None; a folder that is not a run folder is
    refused with one sentence (a UserError), never a traceback."""

    kind = "report"

    def test_methods_return_their_types(self, tmp_path):
        from vpeval.api import ReportSections
        from vpeval.errors import UserError

        report = self.make(tmp_path)
        run = tmp_path / "run"
        run.mkdir()
        for fmt in ("md", "csv", "latex"):
            try:
                table = report.table([run], fmt, {"metric": None, "rows": None, "columns": None, "best": None})
            except UserError:
                continue
            assert table is None or isinstance(table, str)
        assert isinstance(report.figures([], tmp_path / "figures"), list)
        from vpeval.report_spec import ReportSpec

        sections = report.declared(ReportSpec(), [], tmp_path / "figures", lambda **_: "")
        assert sections is None or isinstance(sections, ReportSections)
