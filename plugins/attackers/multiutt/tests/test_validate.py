"""multiutt's frame_source and asr name other plugins: `vpeval validate` checks them."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

EXPERIMENT = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
protocols: [O-O]
attackers: [{use: multiutt, params: PARAMS}]
"""


@pytest.mark.parametrize(
    ("params", "where", "says"),
    [
        ("{frame_source: fbamk}", "(attackers[0].params.frame_source)", "did you mean 'fbank'?"),
        ("{frame_source: kimi-lik}", "(attackers[0].params.frame_source)", "did you mean 'kimi-like'?"),
        ("{asr: whispr}", "(attackers[0].params.asr)", "did you mean 'whisper'?"),
        (
            "{system: ssl-whisper, cross_frames: kimi-lik}",
            "(attackers[0].params.cross_frames)",
            "did you mean 'kimi-like'?",
        ),
    ],
)
def test_named_plugins_are_checked(params, where, says):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(EXPERIMENT.replace("PARAMS", params), "exp.yaml")
    assert f"exp.yaml, line 4 {where}" in str(info.value) and says in str(info.value)
