"""Transcription on the dask executor: WER's Whisper runs on the cluster's workers (each loads its own
model; the ASR pickles without it) and gives the local run's transcripts and numbers."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import PluginError
from vpeval.plugins import get_plugin_manager
from vpeval.run.runner import Runner

try:  # other plugins are reached through the core, never imported
    get_plugin_manager().get("asr", "whisper")
    get_plugin_manager().get("corpus", "synth")
except PluginError:
    pytest.skip("the whisper ASR and the synth corpus plugins are not installed", allow_module_level=True)

EXPERIMENT = """\
name: dask-wer-test
seed: 2
data:
  corpus: {use: synth, params: {preset: tiny, speakers: 4, utterances: 2}}
  attacker_train_speakers: 0
protocols: [O-O]
metrics: [{use: wer, params: {bootstrap: 10}}]
"""


def run(root: Path, text: str):
    return Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=root / "cache", output=root / "run", quiet=True
    ).run()


def test_whisper_pickles_without_its_loaded_model():
    from vpeval.api import PluginContext

    whisper = get_plugin_manager().get("asr", "whisper")
    asr = whisper(whisper.Params(), PluginContext())
    asr._model = object()  # stands in for a loaded CTranslate2 model, which cannot be pickled
    copy = pickle.loads(pickle.dumps(asr))
    assert copy._model is None and copy.params == asr.params and asr._model is not None


def test_wer_transcribes_on_the_workers_with_the_local_transcripts(tmp_path, cluster):
    local = run(tmp_path / "local", EXPERIMENT)
    distributed = run(
        tmp_path / "dask",
        EXPERIMENT + f"executor: {{use: dask, params: {{address: '{cluster.scheduler_address}', batch: 2}}}}\n",
    )
    assert [r["value"] for r in distributed.rows] == [r["value"] for r in local.rows] and local.rows
    hypotheses = sorted((tmp_path / "local" / "cache").rglob("hyp_original.txt"))
    assert hypotheses and [p.read_text() for p in hypotheses] == [
        p.read_text() for p in sorted((tmp_path / "dask" / "cache").rglob("hyp_original.txt"))
    ]
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        keys = client.run_on_scheduler(
            lambda dask_scheduler: {str(e[0]) for e in dask_scheduler.transition_log if e[2] == "memory"}
        )
    assert any(k.startswith("vpeval-wer--original-speech") for k in keys), sorted(keys)[:5]
    assert "cannot be pickled" not in (tmp_path / "dask" / "run" / "run.log").read_text()
