"""Each system name maps to its strategy class (systems.py), which declares what the attacker used to
decide with per-system branches; attacker.py itself has none left."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

import vpeval_multiutt.attacker
from vpeval_multiutt import systems
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.params import CPU_TEST_SIZE, SYSTEMS, MultiUttParams

# What the attacker decided per system before the strategies: (uses audio, text, prosody, cross frames),
# then (speaker_level, audio_aggregation) at fusion_level frame and at fusion_level utterance.
EXPECTED = {
    "mean": ((True, False, False, False), (True, "mean"), (True, "mean")),
    "query-attention": ((True, False, False, False), (True, "mean"), (True, "mean")),  # two-stage: frozen ECAPA
    "frame-concat": ((True, False, False, False), (True, "frame-concat"), (True, "frame-concat")),
    "text": ((False, True, False, False), (True, "mean"), (True, "mean")),
    "audio-text": ((True, True, False, False), (True, "frame-concat"), (False, "mean")),
    "audio-prosody": ((True, False, True, False), (True, "frame-concat"), (False, "mean")),
    "hybrid": ((True, True, False, False), (False, "mean"), (False, "mean")),
    "rjca": ((True, True, False, False), (False, "mean"), (False, "mean")),
    "rjca-global-text": ((True, True, False, False), (True, "mean"), (True, "mean")),
    "ssl-whisper": ((True, False, False, True), (True, "frame-concat"), (True, "frame-concat")),
}


def params(system: str, **more) -> MultiUttParams:
    return MultiUttParams(**{**CPU_TEST_SIZE, "system": system, **more})


def test_every_system_in_params_has_a_strategy_named_after_it():
    literal = set(typing.get_args(MultiUttParams.model_fields["system"].annotation))
    assert literal == set(SYSTEMS) == set(systems.SYSTEM_CLASSES) == set(EXPECTED)
    for name in SYSTEMS:
        strategy = systems.system_for(params(name))
        assert isinstance(strategy, systems.SYSTEM_CLASSES[name]) and strategy.name == name
        assert MultiUttAttacker(params(name)).strategy.name == name


def test_weighted_audio_text_strategies():
    """weighted: the paper's embedding weights before a fusion layer; weighted-score: the score sum, no layers."""
    weighted = systems.system_for(params("audio-text", fusion="weighted"))
    assert type(weighted) is systems.WeightedAudioTextSystem and weighted.name == "audio-text"
    score = systems.system_for(params("audio-text", fusion="weighted-score"))
    assert type(score) is systems.WeightedScoreAudioTextSystem and score.name == "audio-text"
    assert type(systems.system_for(params("audio-text"))) is systems.AudioTextSystem


def test_query_attention_strategy_follows_aggregation_training():
    two_stage = systems.system_for(params("query-attention"))
    assert type(two_stage) is systems.TwoStageQueryAttentionSystem and two_stage.audio_aggregation == "mean"
    e2e = systems.system_for(params("query-attention", aggregation_training="end-to-end"))
    assert type(e2e) is systems.QueryAttentionSystem and e2e.audio_aggregation == "query-attention"


@pytest.mark.parametrize("system", SYSTEMS)
def test_strategy_declares_what_the_system_uses(system):
    uses, at_frame, at_utterance = EXPECTED[system]
    for level, (speaker_level, aggregation) in (("frame", at_frame), ("utterance", at_utterance)):
        strategy = MultiUttAttacker(params(system, fusion_level=level)).strategy
        assert (strategy.uses_audio, strategy.uses_text, strategy.uses_prosody, strategy.uses_cross_frames) == uses
        assert (strategy.speaker_level, strategy.audio_aggregation) == (speaker_level, aggregation), level


@pytest.mark.parametrize(
    ("system", "fusion", "training"),
    [(s, "concat", "two-stage") for s in SYSTEMS]
    + [("audio-text", "weighted", "two-stage"), ("audio-text", "weighted-score", "two-stage")]
    + [("query-attention", "concat", "end-to-end")],
)
def test_strategies_with_fusion_layers_are_the_systems_that_train_them(system, fusion, training):
    p = params(system, fusion=fusion, aggregation_training=training)
    kind = type(systems.system_for(p))
    for hook in ("build_fusion", "fusion_step"):
        assert (getattr(kind, hook) is not getattr(systems.System, hook)) == p.trains_fusion, hook
    assert kind.side is not systems.System.side


def _names_a_system(node: ast.AST) -> bool:
    """`x.system`: self.system, self.params.system, p.system."""
    return isinstance(node, ast.Attribute) and node.attr == "system"


def _is_system_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in SYSTEMS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_system_literal(e) for e in node.elts)
    return isinstance(node, ast.Name) and node.id in ("SYSTEMS", "AUDIO_SYSTEMS")


def per_system_branches(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_a_system(o) for o in operands) and any(_is_system_literal(o) for o in operands):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and _names_a_system(node.func.value)
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_attacker_has_no_per_system_branches():
    assert per_system_branches(Path(vpeval_multiutt.attacker.__file__).read_text()) == []


def test_the_branch_finder_finds_the_forms_the_attacker_used():
    old = (
        'if self.system == "hybrid": pass\nif self.system in ("rjca", "text"): pass\n'
        'if self.system.startswith("rjca"): pass\nif self.system in AUDIO_SYSTEMS: pass\n'
        'if config.get("system") != self.system: pass\n'
    )
    assert len(per_system_branches(old)) == 4  # the last compares two values, it picks no system
