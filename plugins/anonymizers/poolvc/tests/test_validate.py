"""poolvc's pool, encoder and selection name other plugins: `vpeval validate` checks them, with file and line."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError, PluginError
from vpeval.plugins import plugin_context
from vpeval_poolvc.anonymizer import PoolVC

EXPERIMENT = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
attackers: [ge2e]
anonymizers:
  - use: poolvc
    params: PARAMS
"""


def error(params: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment_text(EXPERIMENT.replace("PARAMS", params), "exp.yaml")
    assert "\n" not in str(info.value)
    return str(info.value)


def test_unknown_pool_and_encoder_names_are_refused_at_validate():
    assert error("{pool: {use: synthh}}").startswith(
        "exp.yaml, line 6 (anonymizers[0].params.pool.use): anonymizer poolvc field 'pool.use': "
        "No corpus plugin named 'synthh' is installed; did you mean 'synth'?"
    )
    assert "(anonymizers[0].params.encoder.use)" in error("{encoder: {use: ge2ee}}")


def test_a_selection_typo_suggests_the_rule_and_says_nothing_of_an_encoder():
    msg = error("{selection: farthest-randon}")
    assert "(anonymizers[0].params.selection)" in msg and "did you mean 'farthest-random'?" in msg
    assert "encoder" not in msg


def test_selection_needs_an_embedding_anonymizer_and_valid_params():
    assert "works on embeddings" in error("{selection: mcadams}")
    msg = error(
        "{selection: ohnn, encoder: {use: ge2e}, selection_params: {pool: {use: synth, params: {speakers: 1}}}}"
    )
    assert "(anonymizers[0].params.selection_params.pool.params.speakers)" in msg


def test_at_run_time_a_misspelt_selection_is_not_called_a_missing_encoder(tmp_path):
    anonymizer = PoolVC(
        PoolVC.Params(
            pool={"use": "synth", "params": {"preset": "tiny", "speakers": 2, "utterances": 1}},
            selection="farthest-randon",
        ),
        plugin_context(work_dir=tmp_path),
    )
    with pytest.raises(PluginError) as info:
        anonymizer.prepare()
    assert "farthest-randon" in str(info.value) and "encoder" not in str(info.value)
