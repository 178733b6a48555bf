"""An ecapa/xvector encoder trained here names a corpus and the attacker's params: both checked at validate."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

EXPERIMENT = """\
name: t
data: {corpus: {use: synth, params: {preset: tiny}}}
protocols: [O-O]
metrics:
  - use: embedding-privacy
    params:
      encoder: ENCODER
      encoder_params:
        train_corpus: {use: CORPUS}
        train_params: {channels: CHANNELS}
"""


def error(encoder="ecapa", corpus="synth", channels="[64, 64, 64, 64, 192]") -> str:
    text = EXPERIMENT.replace("ENCODER", encoder).replace("CORPUS", corpus).replace("CHANNELS", channels)
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    assert "\n" not in str(info.value)
    return str(info.value)


def test_train_params_are_the_attackers_params():
    msg = error(channels="[64, 64, 64, 64, 1000000000000]")
    assert msg.startswith("exp.yaml, line 10 (metrics[0].params.encoder_params.train_params.channels[4]): ")
    assert "attacker ecapa" in msg
    assert "attacker xvector" in error(encoder="xvector", channels="[1000000000000]")


def test_train_corpus_must_be_installed():
    msg = error(corpus="synthh")
    assert "(metrics[0].params.encoder_params.train_corpus.use)" in msg and "did you mean 'synth'?" in msg


def test_good_settings_validate():
    load_experiment_text(
        EXPERIMENT.replace("ENCODER", "ecapa").replace("CORPUS", "synth").replace("CHANNELS", "[64, 64, 64, 64, 192]"),
        "exp.yaml",
    )
