"""exp/asv_orig as the VoicePrivacy toolkit ships it: the model in CKPT+<N> sub-folders, of which the
toolkit's run_evaluation.py uses the latest (scan_checkpoint(model_dir, 'CKPT+') or model_dir)."""

from __future__ import annotations

import numpy as np

from vpeval.build import validate_params
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.embedding import Embedder, vpc_waveform
from vpeval_speechbrain.tiny import write_ecapa_folder


def test_the_latest_ckpt_folder_is_the_model_and_validates(tmp_path):
    asv_orig = tmp_path / "exp" / "asv_orig"
    write_ecapa_folder(asv_orig / "CKPT+9", seed=1)
    write_ecapa_folder(asv_orig / "CKPT+12", seed=2)  # 12 > 9 as a number (and not as text)
    cls = get_plugin_manager().get("attacker", "speechbrain")
    assert cls.missing_paths(validate_params(cls, {"source": str(asv_orig)})) == []
    attacker = cls(validate_params(cls, {"source": str(asv_orig)}), plugin_context(work_dir=tmp_path / "w"))
    corpus = make_corpus(tmp_path / "audio", speakers=1, utterances=2, seconds=0.7)
    side = attacker.represent_many([corpus.utterances[:1]])[0]
    seed = attacker.context.torch_seed("speechbrain", "pooling-noise")
    wave = vpc_waveform(corpus.utterances[0].load(16000))
    for name, same in (("CKPT+12", True), ("CKPT+9", False)):
        expected = Embedder(load_folder(asv_orig / name), noise_seed=seed).embed_batch([wave])[0]
        assert np.allclose(side, expected, atol=1e-6) is same


def test_an_empty_model_folder_names_the_folder(tmp_path):
    cls = get_plugin_manager().get("attacker", "speechbrain")
    (tmp_path / "asv_orig" / "CKPT+1").mkdir(parents=True)
    lines = cls.missing_paths(validate_params(cls, {"source": str(tmp_path / "asv_orig")}))
    assert lines and all("CKPT+1" in line for line in lines)
