"""The WER metric names an asr plugin: `vpeval validate` checks the name and its params."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

EXPERIMENT = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
protocols: [O-O]
metrics: [{use: wer, params: PARAMS}]
"""


@pytest.mark.parametrize(
    ("params", "where", "says"),
    [
        ("{asr: whispr}", "(metrics[0].params.asr)", "did you mean 'whisper'?"),
        ("{asr_params: {beam_size: 0}}", "(metrics[0].params.asr_params.beam_size)", "asr whisper"),
    ],
)
def test_the_asr_and_its_params_are_checked(params, where, says):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(EXPERIMENT.replace("PARAMS", params), "exp.yaml")
    assert f"exp.yaml, line 4 {where}" in str(info.value) and says in str(info.value)


def test_missing_model_folders_are_named_when_the_experiment_loads(tmp_path):
    params = f"{{asr: speechbrain-asr, asr_params: {{source: {tmp_path / 'exp' / 'asr'}}}}}"
    text = EXPERIMENT.replace("PARAMS", params).replace(
        "metrics: [", f"metrics: [{{use: uar, params: {{evaluator: speechbrain, models: {tmp_path / 'ser'}}}}}, "
    )
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    message = str(info.value)
    assert "(asr speechbrain-asr): source" in message and "has no hyperparams.yaml" in message
    assert f"models {tmp_path / 'ser'} is not a folder" in message
