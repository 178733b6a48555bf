"""Base classes that plugins subclass, one per plugin kind, and the context the core hands them.

A plugin class declares `name`, a nested pydantic `Params` model (use `vpeval.api.Params` as the base:
extra fields are forbidden) and the methods of its kind. Heavy imports and model loading belong in
methods (`prepare`, `train`, ...) or lazily cached properties, never at module import or class creation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from vpeval.keys import keyed_rng, stable_int  # stable_int: part of the plugin API
from vpeval.settings import PlanSettings
from vpeval.types import Corpus, EvaluationPlan, FrontendOutput, MetricResult, Scores, TrainingData, Utterance

T = TypeVar("T")


class Params(BaseModel):
    """Base for plugin parameters: unknown fields are errors, NaN and infinity are refused (a plugin
    that means something by them sets `allow_inf_nan=True` in its model_config), values are frozen.

    The core validates them strictly from JSON types (vpeval.build.validate_params): '20' is no int,
    2.0 is no int, true is no number, 1 is no bool. Their JSON dump (resolved.yaml) keeps infinity
    and NaN as numbers rather than null, so that it validates again to the same params.
    """

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, frozen=True, allow_inf_nan=False, ser_json_inf_nan="constants"
    )


@dataclass(frozen=True)
class PluginRef:
    """Marks a Params field that names another plugin, so `vpeval validate` checks the name and its params.

    Put it in the field's annotation; the field holds the plugin's name, or a `{use, params}` mapping or
    model:

        encoder: Annotated[str, PluginRef("encoder", params="encoder_params")] = "ge2e"
        encoder_params: dict[str, Any] = {}
        pool: Annotated[CorpusSpec, PluginRef("corpus")]  # CorpusSpec has `use` and `params`

    `params` names the sibling field that holds the named plugin's parameters (for a plain name).
    `keywords` are values that are built-in choices, not plugin names (for example "random"); None
    means no plugin. `works_on` requires an anonymizer that works on "waveform" or "embedding".
    `name` fixes the plugin (the field then holds only its parameters):
    `train_params: Annotated[dict[str, Any], PluginRef("attacker", name="ecapa")]`.
    The core validates the name (unknown names get the nearest installed name) and the parameters,
    recursively, with the file and line of the nested field; the plugin then calls `context.get`.
    """

    kind: str
    params: str | None = None
    keywords: tuple[str, ...] = ()
    works_on: str | None = None
    name: str | None = None


@dataclass
class PluginContext:
    """What the core gives every plugin instance: seed, folders, threads, logging, helpers by kind."""

    seed: int = 0
    work_dir: Path = field(default_factory=lambda: Path(".vpeval-work"))
    threads: int = 1
    workers: int = 1  # the experiment's `workers` (for sizing thread pools); `map` runs on `executor`
    # Torch threads of trainings: workers join only where the experiment names them (its default, every core,
    # would make trained weights follow the machine: a kernel's sums depend on its thread count).
    training_threads: int = 1
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("vpeval.plugin"))
    # Set by the runner; plugins call the methods below instead of these.
    plugin_factory: Callable[[str, str, dict | None], Plugin] | None = None
    progress_factory: Callable[..., Iterable] | None = None
    # Run-wide switches from the experiment that some plugins honour (for example allow_pipes).
    options: dict[str, Any] = field(default_factory=dict)
    # Where `map` runs: the one executor of the run (set by the runner, or by plugin_context from its
    # `workers`); None: in this process.
    executor: Executor | None = None
    # Where torch models run and in what precision (vpeval.device): resolved by the runner, never "auto".
    # A plugin moves its models to `device` and wraps forward passes in `autocast()`; the CPU: cpu_precision.
    device: str = "cpu"
    precision: str = "fp32"

    def autocast(self):
        """torch.autocast for the run's precision (bf16 / fp16 on a GPU, bf16 on the CPU); a no-op in fp32."""
        from vpeval.device import autocast

        return autocast(self.device, self.precision)

    @property
    def on_gpu(self) -> bool:
        """Whether torch work runs on a GPU: batch it in this process there, never in forked workers."""
        return self.device.startswith("cuda")

    def rng(self, *keys: object) -> np.random.Generator:
        """A generator fixed by the experiment seed and the keys (for example a speaker id)."""
        return keyed_rng(self.seed, *keys)

    def torch_seed(self, *keys: object) -> int:
        return stable_int(self.seed, *keys) & 0x7FFFFFFF

    def folder(self, *parts: str) -> Path:
        """A folder under this plugin's work directory, created on demand."""
        path = self.work_dir.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def get(self, kind: str, name: str, params: dict | None = None) -> Plugin:
        """Another plugin by kind and name, for helpers such as a speaker `encoder` or an `asr`.

        The plugin_factory that builds it is set by whoever makes the context: the runner, or
        `vpeval.plugins.plugin_context(...)` in scripts and tests.
        """
        if self.plugin_factory is None:
            from vpeval.errors import PluginError

            raise PluginError(
                f"this plugin context has no plugin factory, so it cannot make the {kind} '{name}'; create the "
                "context with vpeval.plugins.plugin_context(...) or pass plugin_factory=..."
            )
        return self.plugin_factory(kind, name, params)

    def progress(self, items: Iterable[T], total: int | None = None, description: str = "") -> Iterable[T]:
        """Wrap a long loop so the run shows a bar with an ETA."""
        if self.progress_factory is None:
            return items
        return self.progress_factory(items, total=total, description=description)

    def map(self, func: Callable[[T], Any], items: Iterable[T], description: str = "") -> list[Any]:
        """func(item) for every item on the context's executor (none: in this process); results in item order.

        Locally (the `local` executor), more than one worker forks processes that inherit everything
        prepared so far (models, caches) without pickling them. A cluster executor (dask) pickles func
        once per call with cloudpickle and sends it once to each worker, so a closure over a plugin
        carries the plugin (and its model) along; the contexts inside arrive without the run's plugin
        factory, progress bar and executor (get helpers before calling map). A func that cannot be
        pickled runs here.
        Either way only the results travel back, so keep them small (a vector, a row), and what func
        changes in this process's objects is lost with the worker: return it instead.
        Inside a worker process it runs in-process (no nested pools). `description` names the stage.
        """
        import multiprocessing

        items = list(items)
        nested = multiprocessing.parent_process() is not None
        executor = None if nested else self.executor
        pairs = list(enumerate(items))
        call = IndexedCall(func)
        results = (call(pair) for pair in pairs) if executor is None else executor.map(call, pairs, description)
        out: list[Any] = [None] * len(items)
        for index, value in self.progress(results, total=len(items), description=description):
            out[index] = value
        return out

    def __getstate__(self) -> dict[str, Any]:
        """What travels to another process (a cluster worker): the run's plugin factory, progress bar and
        executor stay here, and the worker maps in-process; the logger travels by name."""
        state = dict(self.__dict__)
        state.update(plugin_factory=None, progress_factory=None, executor=None, workers=1, log=self.log.name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, log=logging.getLogger(state["log"]))

    def __copy__(self) -> PluginContext:
        return replace(self)  # a copy in this process keeps the run's parts (pickling leaves them)

    def child(self, name: str) -> PluginContext:
        return PluginContext(
            seed=self.seed,
            work_dir=self.work_dir / name,
            threads=self.threads,
            workers=self.workers,
            training_threads=self.training_threads,
            log=self.log.getChild(name),
            plugin_factory=self.plugin_factory,
            progress_factory=self.progress_factory,
            options=self.options,
            executor=self.executor,
            device=self.device,
            precision=self.precision,
        )

    def apply_threads(self) -> None:
        """Make torch (if loaded) use the thread count the run asks for, and keep the memory that large
        tensors free for the next batch (vpeval.memory: no page faults per batch on the CPU)."""
        import sys

        from vpeval.memory import reuse_freed_memory

        reuse_freed_memory()
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(max(1, self.threads))


@dataclass(frozen=True)
class IndexedCall:
    """(index, item) -> (index, func(item)): executors yield in completion order, `map` puts results back
    in item order. A module-level class, so it pickles by reference and carries func by value."""

    func: Callable[[Any], Any]

    def __call__(self, pair: tuple[int, Any]) -> tuple[int, Any]:
        return pair[0], self.func(pair[1])


class Plugin:
    """Common base. Subclasses set `kind` (through their kind's base), `name` and `Params`."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = Params

    # Filled in by the plugin manager at registration.
    distribution: ClassVar[str] = ""
    version: ClassVar[str] = ""
    # True for plugins whose numbers depend on the device and precision (torch models): off the CPU's
    # fp32 their cache keys carry both (vpeval.device.numerics_identity).
    device_sensitive: ClassVar[bool] = False

    def __init__(self, params: Params | None = None, context: PluginContext | None = None):
        self.params = params if params is not None else self.Params()
        self.context = context if context is not None else PluginContext()

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        """Sentences naming each file or folder that `params` names and this machine lacks (a data root, a
        model folder), with what to do; `vpeval validate` prints them at the params. Keep it to existence
        checks (no loading): it runs on every validate."""
        return []

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


@dataclass
class Voice:
    """Which pseudo-speaker an anonymizer should produce for one utterance.

    `key` is the utterance id at level "utterance" and the speaker id at level "speaker", and `rng`
    is seeded from it: an anonymizer draws its pseudo-speaker from `rng` first, so every utterance
    of a speaker gets the same pseudo-speaker at speaker level and a new one at utterance level.
    """

    key: str
    level: str
    rng: np.random.Generator
    utterance: Utterance | None = None


class Anonymizer(Plugin):
    """Waveform in, anonymized waveform out (and, for embedding anonymizers, vectors in and out)."""

    kind: ClassVar[str] = "anonymizer"
    # None: accepts audio at any rate. Otherwise the core resamples input to this rate first.
    sample_rate: ClassVar[int | None] = None
    # What it transforms: "waveform", "embedding" or both.
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    # False: the output does not depend on the audio given (speech stored elsewhere, found by utterance id), so
    # `vpeval validate` lets the step only start a chain: after another step it would discard that step's output.
    reads_input: ClassVar[bool] = True
    # How the core stores what the chain's last step returns: "PCM_16" (16-bit WAV, clipped at +-1), or "FLOAT"
    # (32-bit float WAV: every sample as returned, beyond +-1 too; audio made elsewhere stays as it was stored).
    output_subtype: ClassVar[str] = "PCM_16"
    # What the core's audio gate lets an output be (vpeval.audio_gate): its length as a share of the input's (None: any,
    # for a plugin that re-times speech on purpose), and silent when declared an answer (ASR + TTS heard no words).
    duration_band: ClassVar[tuple[float, float] | None] = (0.5, 2.0)
    silence_allowed: ClassVar[bool] = False

    def prepare(self) -> None:
        """Load models or fit on pool data (through self.context). Called once before use."""

    def input_fingerprint(self) -> str | None:
        """A digest of files the output depends on beyond the parameters (None: nothing beyond them).

        The core adds it to the anonymization cache key, so speech regenerated outside vpeval in the
        same folder is not reused. Called before `prepare`; keep it cheap (the core's file-hash index).
        """
        return None

    def expect(self, utterances: Sequence[Utterance]) -> None:
        """The utterances the core is about to anonymize, before the first one; raise a UserError to refuse."""

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        """Anonymize one mono float32 waveform; return float32 audio at the same sample rate.

        The core hands it mono audio with samples and checks what it returns (once, in the anonymize task: the
        audio gate, vpeval.audio_gate), so an anonymizer need not check either.
        """
        raise NotImplementedError(f"anonymizer {self.name} does not work on waveforms")

    def output_rate(self, sample_rate: int, voice: Voice) -> int:
        """The rate of what `anonymize` returns for `voice` when handed audio at `sample_rate`: the same rate,
        unless the anonymizer returns audio at a rate of its own (precomputed files keep theirs)."""
        return sample_rate

    def stored_file(self, utterance: Utterance) -> str | None:
        """The file `anonymize` returns as stored for `utterance`, which the audio gate names; None: computed."""
        return None

    def anonymize_embeddings(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        """Map original speaker vectors [B, D] to pseudo-speaker vectors [B, D], one voice per row."""
        raise NotImplementedError(f"anonymizer {self.name} does not work on embeddings")


class Frontend(Plugin):
    """The speech interface of a speech language model: waveform to tokens and/or features."""

    kind: ClassVar[str] = "frontend"
    sample_rate: ClassVar[int] = 16000
    frame_rate: ClassVar[float] = 12.5

    def fit(self, corpus: Corpus) -> None:
        """Learn what the frontend learns from data (codebooks); frozen pretrained ones do nothing."""

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        """Encode mono float32 audio at `sample_rate`."""
        raise NotImplementedError

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """`encode` of each waveform, in order; torch frontends override it to run padded batches on the
        run's device, with outputs equal to the per-waveform ones (tests/contracts check it)."""
        return [self.encode(audio) for audio in audios]

    def save(self, folder: Path) -> None:
        """Store what `fit` learned."""

    def load(self, folder: Path) -> None:
        """Restore what `save` stored."""


class Attacker(Plugin):
    """A speaker verification attack model: trains on (anonymized) speech, represents sets of
    utterances, scores trials.

    The core calls `train` once (unless `needs_training` is False), `save`/`load` around the cache,
    then `represent` for each distinct trial side and `score` on batches of side pairs.
    """

    kind: ClassVar[str] = "attacker"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = True
    pretrained_on: ClassVar[str] = ""  # with needs_training False: what its weights learned from, as reports say it
    uses_frontend: ClassVar[bool] = False

    frontend: Frontend | None = None  # set by the core when the experiment names one

    def train(self, data: TrainingData) -> None:
        """Learn from the training stages (original and/or anonymized speech)."""

    def save(self, folder: Path) -> None:
        """Store the trained state (torch: torch.save of a state dict)."""

    def load(self, folder: Path) -> None:
        """Restore what `save` stored (torch: torch.load(..., weights_only=True))."""

    @classmethod
    def check_experiment(cls, params: dict[str, Any], anonymizers: dict[str, list[str]]) -> list[str]:
        """Sentences refusing this attacker's validated params in this experiment (none by default).

        `anonymizers` maps each anonymizer label to the plugin names of its chain. `vpeval validate`
        reports each sentence at the attacker's params, e.g. an attacker that must not have seen the
        systems it is evaluated on.
        """
        return []

    def init_from(self, folder: Path) -> None:
        """Start the next `train` from what another attacker of this class saved (fine-tuning).

        The core calls it for an experiment's `init_from: <attacker label>`, before `train`.
        """
        from vpeval.errors import ConfigError

        raise ConfigError(f"attacker {self.name} cannot start from another trained model; remove `init_from`.")

    def training_curve(self) -> list[dict[str, Any]]:
        """The epochs of the training this instance holds (after `train` or `load`), for the report's curves
        and its under-training alarm: dicts with `epoch` and any of `loss`, `validation_eer` (a fraction, 0-1;
        the report shows %), `stage` (staged training) and `selected` (the epoch kept). Empty: no curve to show."""
        return []

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """One vector for a set of N utterances of one side of a trial."""
        raise NotImplementedError

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        """Vectors [S, D] for many sides; override to batch."""
        items = self.context.progress(sides, total=len(sides), description=f"{self.name}: represent")
        return np.stack([self.represent(side) for side in items])

    def inversion_embeddings(
        self, corpus: Corpus, reference: Corpus | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """For attackers that recover a speaker embedding (seed 002): (recovered [U, D] from `corpus`,
        target [U, D] from the utterance of the same id in `reference`, default `corpus`, speakers [U]).

        The core hands them to metrics that need "embeddings" (`inversion`). None: not such an attacker.
        """
        return None

    def inversion_pairs(self, corpus: Corpus) -> tuple[np.ndarray, str] | None:
        """Which (recovered row, target row) pairs of `inversion_embeddings(corpus)` the `inversion` metric
        scores, as int64 [P, 2], and one sentence saying where they come from (a trial list, a seeded sample
        of all pairs); None: every pair of different rows."""
        return None

    @classmethod
    def recovers_embeddings(cls) -> bool:
        """Whether this attacker recovers speaker embeddings (it overrides `inversion_embeddings`): the one
        test that validation (a metric that needs "embeddings") and the runner (which attackers feed it) ask."""
        return cls.inversion_embeddings is not Attacker.inversion_embeddings

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        """Scores [T] for row-wise pairs of representations; cosine similarity by default."""
        return cosine_rows(enroll, test)


class Metric(Plugin):
    """Turns scores, speech or embeddings into numbers.

    `needs` says which fields of `MetricInputs` it reads: "scores" (once per attacker, protocol and
    N), "speech" (once per anonymizer: original and anonymized evaluation speech), "similarity"
    (utterance-by-utterance score matrices of an attacker) or "embeddings".
    """

    kind: ClassVar[str] = "metric"
    needs: ClassVar[str] = "scores"
    # The names its results carry (`MetricResult.metric`); empty: one name, the plugin's own. The report
    # section's `metric:` is checked against them when the experiment loads (the metric contract suite
    # checks that compute() keeps to them).
    result_metrics: ClassVar[tuple[str, ...]] = ()
    # "embeddings" only: also hand it the attacker's training speech (MetricInputs.train / embed_train).
    reads_training_side: ClassVar[bool] = False

    @classmethod
    def result_names(cls) -> tuple[str, ...]:
        return cls.result_metrics or (cls.name,)

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        raise NotImplementedError


@dataclass
class MetricInputs:
    scores: Scores | None = None
    original: Corpus | None = None  # evaluation speech, original
    anonymized: Corpus | None = None  # the same utterance ids, anonymized
    similarity: dict[str, SimilarityMatrix] = field(default_factory=dict)  # "O-O", "O-A", "A-A"
    recovered: np.ndarray | None = None  # embeddings an inversion attack recovered [B, D]
    target: np.ndarray | None = None  # the true embeddings [B, D]
    speakers: np.ndarray | None = None  # speaker per row of recovered/target
    pairs: np.ndarray | None = None  # (recovered row, target row) pairs to score [P, 2]; None: every other row
    pairs_note: str = ""  # where `pairs` come from (a trial list, a seeded sample), reported with the metric
    train: Corpus | None = None  # the speech the attacker trained on (metrics that read the training side)
    embed_train: Callable[[Sequence[str]], np.ndarray] | None = None  # its vectors of those utterance ids of `train`
    attributes: dict[str, Any] = field(default_factory=dict)  # coordinates: protocol, n, ...


@dataclass
class SimilarityMatrix:
    """Scores of every enrollment-side utterance (rows) against every test-side utterance (columns)."""

    scores: np.ndarray  # [R, C]
    row_speakers: np.ndarray
    col_speakers: np.ndarray
    row_ids: np.ndarray | None = None  # utterance ids, so a metric can leave out self-pairs
    col_ids: np.ndarray | None = None


class SpeakerEncoder(Plugin):
    """A speaker embedding model shared by attackers, anonymizers and metrics."""

    kind: ClassVar[str] = "encoder"
    sample_rate: ClassVar[int] = 16000
    dim: ClassVar[int] = 0

    def embed(self, audio: np.ndarray) -> np.ndarray:
        """One embedding [D] for mono float32 audio at `sample_rate`."""
        raise NotImplementedError

    def embed_batch(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """Embeddings [B, D] of several waveforms, in order; torch encoders override it to run padded
        batches on the run's device, equal to `embed` of each (exactly where masks allow)."""
        return np.stack([self.embed(audio) for audio in audios])

    def embed_corpus(self, corpus: Corpus) -> np.ndarray:
        """Embeddings [U, D] for every utterance of a corpus, in its order."""
        items = self.context.progress(corpus.utterances, total=len(corpus), description=f"{self.name}: embed")
        return np.stack([self.embed(u.load(self.sample_rate)) for u in items])


@dataclass
class Transcript:
    text: str
    words: list[tuple[str, float, float]] = field(default_factory=list)  # (word, start s, end s)


class ASR(Plugin):
    """Speech recognition, for WER and for attackers that read transcripts."""

    kind: ClassVar[str] = "asr"
    sample_rate: ClassVar[int] = 16000

    def transcribe(self, audio: np.ndarray) -> Transcript:
        raise NotImplementedError


class CorpusSource(Plugin):
    """A source of speech with speaker labels: a generated corpus, a manifest, a Kaldi data folder."""

    kind: ClassVar[str] = "corpus"

    def load(self) -> Corpus:
        """The whole corpus. Generated corpora build and cache themselves under context.work_dir."""
        raise NotImplementedError

    def evaluation_plan(self, corpus: Corpus, settings: PlanSettings) -> EvaluationPlan | None:
        """A predefined split and trial lists, or None.

        Sources whose data comes with its own protocol (VoicePrivacy trial files) return it; the
        default None lets the core split speakers and make trials from the experiment's settings.
        """
        return None

    def speaker_attributes(self) -> dict[str, dict[str, str]]:
        """Speaker attributes that the corpus declares (attribute -> speaker -> value: gender, age, accent), for
        metrics that break results down by them; {} when it declares none."""
        return {}


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of matching rows of a and b."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = np.einsum("ij,ij->i", a, b)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-12)


class Executor(Plugin):
    """Where per-item work runs: this machine's processes (`local`) or a cluster (a plugin such as `dask`).

    `map(func, items, description)` yields func(item) for every item, in completion order (callers that
    need item order carry an index in the item). func writes its own output (a file per item, atomically)
    and returns something small. Two callers: the core's anonymization (a small picklable task per
    stage) and `PluginContext.map` (plugins' per-utterance stages: embeddings, features), whose func
    may close over a plugin and its model. An executor that runs func in other machines' processes
    pickles func with cloudpickle once per call, sends it once to each worker, and runs func here when
    it cannot be pickled (logging which stage). `close()` releases workers; the runner calls it when the
    run ends. Executors are not part of any cache key: results must not depend on them.
    """

    kind: ClassVar[str] = "executor"
    # True when func runs in processes that did not fork from this one (they rebuild what they need).
    remote: ClassVar[bool] = False

    def map(self, func: Callable[[T], Any], items: Sequence[T], description: str = "") -> Iterable[Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Release workers and connections (default: nothing to release)."""


@dataclass
class ReportSections:
    """What report plugins add to a run's report.md: the verdicts of the experiment's findings (also written
    to results.json), Markdown blocks for the findings and tables, figures and one-line notes."""

    findings: list[dict[str, Any]] = field(default_factory=list)
    findings_markdown: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    figures: list[Any] = field(default_factory=list)  # vpeval.report.figures.Figure
    notes: list[str] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)  # (path in the run folder, text), e.g. a toolkit's


class Report(Plugin):
    """Reporting beyond the run's own tables: the experiment's `report:` section (declared tables, curves and
    findings) in report.md, and tables across run folders (`vpeval report --format`). The core asks every
    installed report plugin, in name order; a method that returns None leaves the work to the others."""

    kind: ClassVar[str] = "report"

    def declared(
        self, spec: Any, rows: list[dict[str, Any]], figures_out: Path, caption: Callable[..., str]
    ) -> ReportSections | None:
        """The sections of `spec` (a vpeval.report_spec.ReportSpec) from the run's result rows; figures go to
        `figures_out`, and `caption(anonymizers=, attackers=, protocols=, n=, metric=)` says what made a table."""
        return None

    def figures(self, rows: list[dict[str, Any]], out: Path) -> list[Any]:
        """Figures every run gets from its result rows (pooled over evaluation sets), drawn into `out` with
        vpeval.report.figures' style() and save(); a list of vpeval.report.figures.Figure."""
        return []

    def run_outputs(self, exp: Any, rows: list[dict[str, Any]]) -> ReportSections | None:
        """What a run folder gets beyond the core's files, for any experiment (a vpeval.schema.ResolvedExperiment):
        `files` written into the folder (a challenge toolkit's own results layout) and `tables`, Markdown blocks
        that report.md shows after the paper tables."""
        return None

    def table(self, folders: list[Path], fmt: str, options: dict[str, Any]) -> str | None:
        """One table of the runs in `folders` as `fmt` (md, csv, latex); `options` holds the command's
        metric, rows, columns and best (None where not given)."""
        return None


KINDS: dict[str, type[Plugin]] = {
    cls.kind: cls
    for cls in (Anonymizer, Attacker, Frontend, Metric, SpeakerEncoder, ASR, CorpusSource, Executor, Report)
}
