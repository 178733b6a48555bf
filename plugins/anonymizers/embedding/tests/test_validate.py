"""Plugins named inside these plugins' params (pool, encoder, base, systems) are checked by `vpeval validate`."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

ANONYMIZER = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
attackers: [ge2e]
anonymizers:
  - use: poolvc
    params: {encoder: {use: ge2e}, selection: SELECTION, selection_params: PARAMS}
"""
METRIC = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
protocols: [O-O]
metrics:
  - use: embedding-privacy
    params: PARAMS
"""


def error(template: str, **parts: str) -> str:
    text = template
    for key, value in parts.items():
        text = text.replace(key.upper(), value)
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    assert "\n" not in str(info.value)
    return str(info.value)


def test_compensation_base_must_be_an_installed_embedding_anonymizer():
    msg = error(ANONYMIZER, selection="emotion-compensation", params="{base: ohnm}")
    assert "(anonymizers[0].params.selection_params.base)" in msg and "did you mean 'ohnn'?" in msg
    msg = error(ANONYMIZER, selection="emotion-compensation", params="{base: mcadams}")
    assert "works on embeddings" in msg


def test_pool_and_emotion_corpus_params_are_validated():
    msg = error(
        ANONYMIZER, selection="emotion-compensation", params="{emotion_corpus: {use: synth, params: {preset: huge}}}"
    )
    assert "(anonymizers[0].params.selection_params.emotion_corpus.params.preset)" in msg
    msg = error(ANONYMIZER, selection="ohnn", params="{encoder: {use: ecapa, params: {checkpoint: 5}}}")
    assert "(anonymizers[0].params.selection_params.encoder.params.checkpoint)" in msg


def test_embedding_privacy_encoder_and_systems():
    assert "did you mean 'ge2e'?" in error(METRIC, params="{encoder: ge2f}")
    msg = error(METRIC, params="{systems: [{use: ohnn}, {use: poolvc}]}")
    assert "(metrics[0].params.systems[1].use)" in msg and "works on embeddings" in msg
