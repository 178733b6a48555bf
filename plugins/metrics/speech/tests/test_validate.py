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
