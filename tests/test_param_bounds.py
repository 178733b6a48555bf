"""Every shipped plugin's parameter bounds are checked by `vpeval validate`, before anything runs.

Each case puts one out-of-range value into an otherwise valid experiment that names the shipped plugins,
and expects a ConfigError naming the file, the line and the field. Values here once passed validation and
then hung (synth speakers: 1e12), exhausted memory (ecapa channels: 1e12) or gave a meaningless number
(min-dcf p_target: 2, mcadams alpha: inf).
"""

from __future__ import annotations

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

SKELETON = """\
name: bounds
data:
  corpus: {corpus}
anonymizers:
  - {anonymizer}
attackers:
  - {attacker}
metrics:
  - {metric}
"""
VALID = {
    "corpus": "{use: synth, params: {preset: tiny}}",
    "anonymizer": "{use: mcadams}",
    "attacker": "{use: ge2e}",
    "metric": "{use: eer}",
}
# slot -> (line, dotted location) of the plugin in SKELETON
PLACE = {"corpus": (3, "data.corpus"), "anonymizer": (5, "anonymizers[0]"), "attacker": (7, "attackers[0]"),
         "metric": (9, "metrics[0]")}


def experiment(slot: str, text: str) -> str:
    return SKELETON.format(**{**VALID, slot: text})


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
    ("anonymizer", "{use: selection, params: {pool_vectors: p.npz, farthest: 5, select: 10}}", "select",
     "must not exceed farthest"),
    ("anonymizer", "{use: selection, params: {pool_vectors: p.npz, farthest: 1000000000000}}", "farthest",
     "less than or equal"),
    # anonymizer poolvc
    ("anonymizer", "{use: poolvc, params: {frame_period: 0.0001}}", "frame_period", "greater than or equal to 1"),
    ("anonymizer", "{use: poolvc, params: {n_mels: 20, n_ceps: 40}}", "n_ceps", "must not exceed n_mels"),
    ("anonymizer", "{use: poolvc, params: {k: 1000000000000}}", "k", "less than or equal"),
    ("anonymizer", "{use: poolvc, params: {max_pool_seconds: .inf}}", "max_pool_seconds", "finite"),
    # attackers ecapa, xvector, ge2e, token-probe
    ("attacker", "{use: token-probe, frontend: fbank-rvq, params: {pca_dim: 1000000000}}", "pca_dim",
     "less than or equal"),
    ("attacker", "{use: ecapa, params: {channels: [512, 512, 512, 512, 1000000000000]}}", "channels[4]",
     "less than or equal to 8192"),
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
    ("attacker", "{use: xvector, params: {channels: [512, 512, 512, 512, 1000000000000]}}", "channels[4]",
     "less than or equal"),
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
    ("metric", "{use: embedding-privacy, params: {systems: [{use: ohnn}], repeats: 1000000000}}", "repeats",
     "less than or equal to 1000"),
    # plugins named inside another plugin's parameters: their bounds hold there too
    ("metric", "{use: wer, params: {asr_params: {beam_size: 1000000}}}", "asr_params.beam_size", "less than or equal to 64"),
    ("metric", "{use: wer, params: {asr_params: {temperature: [0, .inf]}}}", "asr_params.temperature[1]", "finite"),
    ("anonymizer", "{use: poolvc, params: {pool: {use: synth, params: {speakers: 1000000000000}}}}",
     "pool.params.speakers", "less than or equal to 10000"),
    ("anonymizer", "{use: poolvc, params: {encoder: {use: ecapa, params: {embed_max_seconds: 0.0001}}}}",
     "encoder.params.embed_max_seconds", "greater than or equal to 0.2"),
    # a frontend, inside the attacker that reads it
    ("attacker", "{use: token-probe, frontend: {use: fbank-rvq, params: {frame_rate: 30}}}", "frame_rate",
     "divide the 100 frames/s"),
    ("attacker", "{use: token-probe, frontend: {use: fbank-rvq, params: {frame_rate: 0}}}", "frame_rate",
     "greater than 0"),
    ("attacker", "{use: token-probe, frontend: {use: fbank-rvq, params: {codebook_size: 1000000000000}}}",
     "codebook_size", "less than or equal"),
    ("attacker", "{use: token-probe, frontend: {use: kimi-like, params: {codebook_size: 1000000000000}}}",
     "codebook_size", "less than or equal"),
    ("attacker", "{use: token-probe, frontend: {use: mimi, params: {num_codebooks: 1000000}}}", "num_codebooks",
     "less than or equal to 32"),
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
