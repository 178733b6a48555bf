"""Every shipped plugin's parameter bounds are checked by `vpeval validate`, before anything runs.

Each case puts one out-of-range value into an otherwise valid experiment that names the shipped plugins,
and expects a ConfigError naming the file, the line and the field. Values here once passed validation and
then hung (synth speakers: 1e12), exhausted memory (ecapa channels: 1e12) or gave a meaningless number
(min-dcf p_target: 2, mcadams alpha: inf).
"""

from __future__ import annotations

import pytest
from one_plugin_experiment import PLACE, experiment

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError


def test_skeleton_is_valid():
    exp = load_experiment_text(experiment("metric", "{use: eer}"), "exp.yaml")
    assert [a.label for a in exp.attackers] == ["ge2e"]


# (slot, plugin text, field location below params, words the message must hold)
CASES = [
    # corpus synth
    ("corpus", "{use: synth, params: {speakers: 1000000000000}}", "speakers", "less than or equal to 10000"),
    ("corpus", "{use: synth, params: {speakers: 5000, utterances: 100}}", "", "speakers x utterances"),
    ("corpus", "{use: synth, params: {utterances: 1000000}}", "utterances", "less than or equal"),
    ("corpus", "{use: synth, params: {seed: -7}}", "seed", "greater than or equal to 0"),
    ("corpus", "{use: synth, params: {sample_rate: 1000000000}}", "sample_rate", "less than or equal"),
    ("corpus", "{use: synth, params: {max_seconds: 1.0e+9}}", "max_seconds", "less than or equal"),
    ("corpus", "{use: synth, params: {sessions: 1000000000000}}", "sessions", "less than or equal"),
    ("corpus", "{use: synth, params: {style_strength: 100}}", "style_strength", "less than or equal"),
    ("corpus", "{use: synth, params: {voice_spread: .inf}}", "voice_spread", "finite"),
    ("corpus", "{use: synth, params: {workers: 1000000}}", "workers", "less than or equal"),
    ("corpus", "{use: synth, params: {snr_db: [40, 20]}}", "snr_db", "swap them"),
    ("corpus", "{use: synth, params: {level_db: [-20, 6]}}", "level_db[1]", "less than or equal to 0"),
    ("corpus", "{use: synth, params: {idiolect_alpha: .nan}}", "idiolect_alpha", "finite"),
    # anonymizer mcadams
    ("anonymizer", "{use: mcadams, params: {alpha: .inf}}", "alpha", "finite"),
    ("anonymizer", "{use: mcadams, params: {alpha: 50}}", "alpha", "less than or equal to 2"),
    ("anonymizer", "{use: mcadams, params: {alpha: 0.01}}", "alpha", "greater than or equal to 0.2"),
    ("anonymizer", "{use: mcadams, params: {alpha_range: [0.9, 0.5]}}", "alpha_range", "swap them"),
    ("anonymizer", "{use: mcadams, params: {alpha_range: [0.5, .nan]}}", "alpha_range[1]", "finite"),
    ("anonymizer", "{use: mcadams, params: {win_ms: 1.0e+12}}", "win_ms", "less than or equal"),
    ("anonymizer", "{use: mcadams, params: {win_ms: 20, shift_ms: 30}}", "shift_ms", "must not exceed win_ms"),
    ("anonymizer", "{use: mcadams, params: {shift_ms: 0.0001}}", "shift_ms", "greater than or equal to 1"),
    ("anonymizer", "{use: mcadams, params: {lp_order: 1000000}}", "lp_order", "less than or equal"),
    # anonymizer ohnn (refused for its parameters before its kind is looked at)
    ("anonymizer", "{use: ohnn, params: {pool_vectors: p.npz, epochs: 1000000000000}}", "epochs", "less than or equal"),
    ("anonymizer", "{use: ohnn, params: {pool_vectors: p.npz, scale: 1.0e+40}}", "scale", "less than or equal to 100"),
    ("anonymizer", "{use: ohnn, params: {pool_vectors: p.npz, rotations: 1000000}}", "rotations", "less than or equal"),
    ("anonymizer", "{use: ohnn, params: {pool_vectors: p.npz, lr: .inf}}", "lr", "finite"),
    (
        "anonymizer",
        "{use: selection, params: {pool_vectors: p.npz, farthest: 5, select: 10}}",
        "select",
        "must not exceed farthest",
    ),
    (
        "anonymizer",
        "{use: selection, params: {pool_vectors: p.npz, farthest: 1000000000000}}",
        "farthest",
        "less than or equal",
    ),
    # anonymizer poolvc
    ("anonymizer", "{use: poolvc, params: {frame_period: 0.0001}}", "frame_period", "greater than or equal to 1"),
    ("anonymizer", "{use: poolvc, params: {n_mels: 20, n_ceps: 40}}", "n_ceps", "must not exceed n_mels"),
    ("anonymizer", "{use: poolvc, params: {k: 1000000000000}}", "k", "less than or equal"),
    ("anonymizer", "{use: poolvc, params: {max_pool_seconds: .inf}}", "max_pool_seconds", "finite"),
    # attackers ecapa, xvector, ge2e, token-probe
    (
        "attacker",
        "{use: token-probe, frontend: fbank-rvq, params: {pca_dim: 1000000000}}",
        "pca_dim",
        "less than or equal",
    ),
    (
        "attacker",
        "{use: ecapa, params: {channels: [512, 512, 512, 512, 1000000000000]}}",
        "channels[4]",
        "less than or equal to 8192",
    ),
    ("attacker", "{use: ecapa, params: {channels: [0, 512, 512, 512, 1536]}}", "channels[0]", "greater than or equal"),
    ("attacker", "{use: ecapa, params: {n_mels: 100000}}", "n_mels", "less than or equal to 128"),
    ("attacker", "{use: ecapa, params: {embedding_dim: 1000000000}}", "embedding_dim", "less than or equal"),
    ("attacker", "{use: ecapa, params: {batch_size: 1000000000000}}", "batch_size", "less than or equal"),
    ("attacker", "{use: ecapa, params: {epochs: 1000000000000}}", "epochs", "less than or equal"),
    ("attacker", "{use: ecapa, params: {lr: .nan}}", "lr", "finite"),
    ("attacker", "{use: ecapa, params: {lr: 1000}}", "lr", "less than or equal to 1"),
    ("attacker", "{use: ecapa, params: {scale: 1.0e+30}}", "scale", "less than or equal to 100"),
    ("attacker", "{use: ecapa, params: {margin: 4}}", "margin", "less than 1.5"),
    ("attacker", "{use: ecapa, params: {crop_seconds: 0.001}}", "crop_seconds", "greater than or equal to 0.2"),
    ("attacker", "{use: ecapa, params: {crop_seconds: .inf}}", "crop_seconds", "finite"),
    (
        "attacker",
        "{use: xvector, params: {channels: [512, 512, 512, 512, 1000000000000]}}",
        "channels[4]",
        "less than or equal",
    ),
    ("attacker", "{use: xvector, params: {embed_max_seconds: 0.0001}}", "embed_max_seconds", "greater than or equal"),
    ("attacker", "{use: ge2e, params: {partial_rate: .inf}}", "partial_rate", "finite"),
    # metrics
    ("metric", "{use: min-dcf, params: {p_target: [2]}}", "p_target[0]", "less than 1"),
    ("metric", "{use: min-dcf, params: {p_target: [0.01, 0]}}", "p_target[1]", "greater than 0"),
    ("metric", "{use: min-dcf, params: {c_miss: .inf}}", "c_miss", "finite"),
    ("metric", "{use: eer, params: {bootstrap: 1000000000000}}", "bootstrap", "less than or equal to 100000"),
    ("metric", "{use: eer, params: {confidence: .nan}}", "confidence", "finite"),
    ("metric", "{use: linkability, params: {bins: 1000000000000}}", "bins", "less than or equal"),
    ("metric", "{use: linkability, params: {omega: .inf}}", "omega", "finite"),
    ("metric", "{use: cllr, params: {bootstrap: -5}}", "bootstrap", "greater than or equal to 0"),
    ("metric", "{use: inversion, params: {epsilon: .inf}}", "epsilon", "finite"),
    ("metric", "{use: uar, params: {folds: 1000000000}}", "folds", "less than or equal to 100"),
    ("metric", "{use: uar, params: {bootstrap: 1000000000000}}", "bootstrap", "less than or equal"),
    ("metric", "{use: wer, params: {bootstrap: 1000000000000}}", "bootstrap", "less than or equal"),
    ("metric", "{use: wer, params: {max_utterances: 0}}", "max_utterances", "greater than or equal to 1"),
    (
        "metric",
        "{use: embedding-privacy, params: {systems: [{use: ohnn}], repeats: 1000000000}}",
        "repeats",
        "less than or equal to 1000",
    ),
    # plugins named inside another plugin's parameters: their bounds hold there too
    (
        "metric",
        "{use: wer, params: {asr_params: {beam_size: 1000000}}}",
        "asr_params.beam_size",
        "less than or equal to 64",
    ),
    ("metric", "{use: wer, params: {asr_params: {temperature: [0, .inf]}}}", "asr_params.temperature[1]", "finite"),
    (
        "anonymizer",
        "{use: poolvc, params: {pool: {use: synth, params: {speakers: 1000000000000}}}}",
        "pool.params.speakers",
        "less than or equal to 10000",
    ),
    (
        "anonymizer",
        "{use: poolvc, params: {encoder: {use: ecapa, params: {embed_max_seconds: 0.0001}}}}",
        "encoder.params.embed_max_seconds",
        "greater than or equal to 0.2",
    ),
    # a frontend, inside the attacker that reads it
    (
        "attacker",
        "{use: token-probe, frontend: {use: fbank-rvq, params: {frame_rate: 30}}}",
        "frame_rate",
        "divide the 100 frames/s",
    ),
    (
        "attacker",
        "{use: token-probe, frontend: {use: fbank-rvq, params: {frame_rate: 0}}}",
        "frame_rate",
        "greater than 0",
    ),
    (
        "attacker",
        "{use: token-probe, frontend: {use: fbank-rvq, params: {codebook_size: 1000000000000}}}",
        "codebook_size",
        "less than or equal",
    ),
    (
        "attacker",
        "{use: token-probe, frontend: {use: kimi-like, params: {codebook_size: 1000000000000}}}",
        "codebook_size",
        "less than or equal",
    ),
    (
        "attacker",
        "{use: token-probe, frontend: {use: mimi, params: {num_codebooks: 1000000}}}",
        "num_codebooks",
        "less than or equal to 32",
    ),
]


@pytest.mark.parametrize("slot, text, field, words", CASES, ids=[f"{c[1]}" for c in CASES])
def test_out_of_range_parameter_is_refused_at_validate(slot, text, field, words):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(experiment(slot, text), "exp.yaml")
    message = str(info.value)
    line, where = PLACE[slot]
    if "frontend: {use" in text:  # the frontend's own parameters
        where += ".frontend"
    location = f"{where}.params.{field}" if field else f"{where}.params"
    assert f"exp.yaml, line {line} ({location}): " in message, message
    assert words in message, message
    assert "\n" not in message and "Traceback" not in message


# -- the examples of the reliability issue: these validated, then ran for ever or crashed ------------

ISSUE_CASES = [
    ("attacker", "{use: multiutt, params: {epochs: 1000000000000}}", "epochs", "less than or equal to 10000"),
    ("attacker", "{use: multiutt, params: {channels: [100000000]}}", "channels[0]", "less than or equal to 8192"),
    (
        "attacker",
        "{use: multiutt, params: {channels: [0, 16, 16, 16, 48]}}",
        "channels[0]",
        "greater than or equal to 8",
    ),
    (
        "attacker",
        "{use: multiutt, params: {fusion_weights: [0.5, 1.0e+300]}}",
        "fusion_weights[1]",
        "less than or equal",
    ),
    ("corpus", "{use: synth, params: {idiolect_alpha: 1.0e+308}}", "idiolect_alpha", "less than or equal to 1000"),
    ("corpus", "{use: synth, params: {seed: 4294967296}}", "seed", "less than or equal to 4294967295"),
    ("attacker", "{use: ecapa, params: {audio_cache_mb: 1000000000000}}", "audio_cache_mb", "less than or equal"),
    (
        "attacker",
        "{use: spinv, params: {stage_a_weights: {align: 1.0e+300}}}",
        "stage_a_weights.align",
        "less than or equal",
    ),
    ("metric", "{use: min-dcf, params: {c_miss: 1.0e+300}}", "c_miss", "less than or equal"),
]


@pytest.mark.parametrize("slot, text, field, words", ISSUE_CASES, ids=[c[1] for c in ISSUE_CASES])
def test_issue_examples_are_refused_at_validate(slot, text, field, words):
    test_out_of_range_parameter_is_refused_at_validate(slot, text, field, words)


@pytest.mark.parametrize(
    "line, words",
    [
        ("workers: 100000", "(workers): input should be less than or equal to 1024"),
        ("threads: 100000", "(threads): input should be less than or equal to 1024"),
        ("seed: 10000000000000000000000000000000000000000", "(seed): input should be less than or equal to 4294967295"),
        (
            "seed: 4294967296",
            "(seed): input should be less than or equal to 4294967295",
        ),  # would repeat seed 0's numbers
        ("enroll_utterances: [1, 1000000]", "(enroll_utterances[1]): input should be less than or equal to 1000"),
        (
            "executor: {use: local, params: {workers: 100000}}",
            "(executor.params.workers): input should be less than or equal to 1024",
        ),
        (
            "executor: {use: dask, params: {batch: 1000000000000}}",
            "(executor.params.batch): input should be less than or equal",
        ),
    ],
)
def test_core_counts_are_bounded(line, words):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(line + "\n" + experiment("metric", "{use: eer}"), "exp.yaml")
    assert f"exp.yaml, line 1 {words}" in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "setting, words",
    [
        ("attacker_train_speakers: 1000000000000", "at most 10,000,000"),
        ("target_trials_per_speaker: 100000000", "less than or equal to 100000"),
    ],
)
def test_data_counts_are_bounded(setting, words):
    text = experiment("metric", "{use: eer}").replace("  corpus:", f"  {setting}\n  corpus:")
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    assert "exp.yaml, line 3 (data." in str(info.value) and words in str(info.value), str(info.value)


def test_largest_seed_and_idiolect_alpha_work():
    """The bounds are where the values stop working, not below: the largest allowed idiolect_alpha draws
    probabilities numpy accepts (1e308 did not), and the largest seed validates."""
    import numpy as np

    from vpeval.params import validate_params
    from vpeval.plugins import get_plugin_manager
    from vpeval_synth.grammar import Idiolect

    synth = get_plugin_manager().get("corpus", "synth")
    params = validate_params(synth, {"idiolect_alpha": 1000.0, "seed": 2**32 - 1})
    rng = np.random.default_rng(0)
    idiolect = Idiolect.draw(rng, params.idiolect_alpha, params.favourites)
    assert idiolect.clause(rng)
    load_experiment_text("seed: 4294967295\n" + experiment("metric", "{use: eer}"), "exp.yaml")


# -- every count and size has an upper bound: a test that walks every schema --------------------------

# Numbers that carry no upper bound on purpose, each with its reason. Nothing else may lack one.
EXEMPT = {
    "Experiment.data.attacker_train_speakers": "bounded in vpeval.settings._share_or_count (a share below 1, a count "
    "at most MAX_SPEAKERS), which gives one sentence for both forms",
    "Experiment.report.curves[].x{}{}": "a position on a figure's axis, in the user's units: no size, count or time "
    "depends on it (StrictModel refuses NaN and infinity)",
    "Experiment.report.findings[].tolerance": "a difference of two results, in the metric's unit: nothing is "
    "allocated or repeated by it (StrictModel refuses NaN and infinity)",
}


def _has_upper_bound(metadata) -> bool:
    import annotated_types
    from pydantic.fields import FieldInfo

    for item in metadata:
        if isinstance(item, (annotated_types.Le, annotated_types.Lt)):
            return True
        if isinstance(item, annotated_types.Interval) and (item.le is not None or item.lt is not None):
            return True
        if isinstance(item, FieldInfo) and _has_upper_bound(item.metadata):
            return True
    return False


def unbounded_numbers(annotation, metadata=(), path: str = "", seen=None) -> list[str]:
    """Dotted paths of the int and float fields (and items of lists, tuples and dict values) below a
    pydantic model or annotation that carry no le/lt bound; bool is not a number here."""
    import types
    import typing

    from pydantic import BaseModel

    seen = set() if seen is None else seen
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return unbounded_numbers(args[0], [*metadata, *args[1:]], path, seen)
    if origin in (typing.Union, types.UnionType):  # `int | None = Field(le=...)`: the bound applies to each member
        return [p for a in args for p in unbounded_numbers(a, metadata, path, seen)]
    if annotation in (int, float):
        return [] if _has_upper_bound(metadata) else [path]
    if origin is dict:
        return unbounded_numbers(args[1], (), path + "{}", seen) if args else []
    if origin is not None and origin is not typing.Literal:  # list, tuple, set, Sequence, ...: their items
        return [p for a in args if a is not Ellipsis for p in unbounded_numbers(a, (), path + "[]", seen)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in seen:
        seen.add(annotation)
        return [
            p
            for name, info in annotation.model_fields.items()
            for p in unbounded_numbers(info.annotation, info.metadata, f"{path}.{name}" if path else name, seen)
        ]
    return []


def test_the_walk_finds_a_missing_bound():
    """The walk itself: an unbounded int, a float in a tuple and in a nested model are found."""
    from typing import Annotated

    from pydantic import BaseModel, Field

    class Inner(BaseModel):
        rate: float = Field(1.0, gt=0)
        ok: float = Field(1.0, le=2)

    class Outer(BaseModel):
        epochs: int = Field(2, ge=1)
        channels: tuple[Annotated[int, Field(le=8)], ...] = (1,)
        weights: tuple[float, float] = (0.5, 0.5)
        inner: Inner | None = None
        flag: bool = True
        sizes: dict[str, Annotated[int, Field(le=3)]] = {}

    assert unbounded_numbers(Outer) == ["epochs", "weights[]", "weights[]", "inner.rate"]


def test_every_number_of_every_plugin_and_of_the_experiment_has_an_upper_bound():
    from vpeval.plugins import get_plugin_manager
    from vpeval.schema import Experiment

    missing = [f"Experiment.{p}" for p in unbounded_numbers(Experiment) if f"Experiment.{p}" not in EXEMPT]
    checked = 0
    for kind, registration in get_plugin_manager().all():
        cls = registration.cls
        missing += [f"{kind} {cls.name}: {p}" for p in unbounded_numbers(cls.Params)]
        checked += 1
    assert checked >= 40, checked  # every shipped plugin is installed in the test environment
    assert not missing, (
        "give these an upper bound (le= or lt=), generous enough for the papers' full-scale "
        "settings, or an entry in EXEMPT with the reason:\n" + "\n".join(missing)
    )
    assert all(p.startswith("Experiment.") for p in EXEMPT)
    assert set(EXEMPT) <= {f"Experiment.{p}" for p in unbounded_numbers(Experiment)}, "an exemption nothing needs"
