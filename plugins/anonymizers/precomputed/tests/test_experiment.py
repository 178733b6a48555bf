"""A whole experiment on speech anonymized outside vpeval, in VoicePrivacy's layout.

The recipe folder holds the original sets (train, dev_enrolls, dev_trials_f/m with trials files) and
their `_anon` copies written by conftest's external toolkit at 22.05 kHz. The experiment evaluates
them with a pretrained and a semi-informed attacker and the score metrics, all unchanged plugins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval.audio import read_audio
from vpeval.config import load_experiment_text
from vpeval.errors import DataError
from vpeval.plugins import get_plugin_manager
from vpeval.run.runner import Runner

NEEDED = {"attacker": ("ge2e", "ecapa"), "metric": ("eer", "linkability")}

EXPERIMENT = """\
name: precomputed-test
seed: 0
data:
  corpus:
    use: kaldi
    params:
      root: DATA
      SETS
      attacker_train: train
      evaluation:
        - {enrolls: dev_enrolls, trials: [dev_trials_f, dev_trials_m]}
  validation_speakers: 0.2
anonymizers:
  - {use: precomputed, label: external, params: {folders: FOLDERS}}
attackers:
  - {use: ge2e}
  - use: ecapa
    label: ecapa-semi
    train_on: anonymized
    params: {channels: [16, 16, 16, 16, 48], embedding_dim: 16, epochs: 2, batch_size: 8, crop_seconds: 0.5,
             lr: 0.005, lr_schedule: constant}
protocols: [O-O, O-A, A-A]
metrics: [eer, linkability]
"""


@pytest.fixture(autouse=True)
def _attackers_and_metrics_installed():
    installed = get_plugin_manager().registry
    absent = [
        f"{kind} {name}" for kind, names in NEEDED.items() for name in names if name not in installed.get(kind, {})
    ]
    if absent:
        pytest.skip(f"needs the installed plugins {', '.join(absent)}")


def experiment_text(recipe, tmp_path, folders=None, sets="sets: []"):
    folders = recipe.anonymized_folders if folders is None else folders
    return EXPERIMENT.replace("DATA", str(recipe.data)).replace("SETS", sets).replace("FOLDERS", json.dumps(folders))


def run(text, tmp_path):
    return Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True
    ).run()


def test_every_attacker_and_metric_runs_on_the_external_speech(recipe, tmp_path):
    result = run(experiment_text(recipe, tmp_path), tmp_path)
    rows = [r for r in result.rows if r["metric"] == "eer" and r["gender"] == "all"]
    got = {(r["attacker"], r["protocol"]) for r in rows}
    assert got == {(a, p) for a in ("ge2e", "ecapa-semi") for p in ("O-O", "O-A", "A-A")}
    assert all(np.isfinite(float(r["value"])) for r in result.rows if r["value"] is not None), [
        r for r in result.rows if r["value"] is None
    ]
    assert {r["metric"] for r in result.rows} >= {"eer", "linkability"}
    # The evaluated speech is the other toolkit's as stored: 22.05 kHz, sample for sample (each attacker and
    # metric resamples it where it reads it).
    anonymized = result.anonymized["external"]
    assert len(anonymized) == sum(len(recipe.sets[s]) for s in ("dev_enrolls", "dev_trials_f", "dev_trials_m"))
    for utt in anonymized.utterances[::7]:
        assert sf.info(utt.path).samplerate == 22050 and utt.sample_rate == 22050
        np.testing.assert_array_equal(utt.load(), read_audio(_path(recipe, utt.id))[0])
    # The semi-informed attacker trained on the external copies of train (and its validation part).
    assert result.executed["anonymize"] == ["external (evaluation)", "external (train)", "external (validation)"]
    assert result.executed["train"] == ["ecapa-semi on external"]


def _path(recipe, uid):
    for name in recipe.sets:
        for line in (recipe.anonymized(name) / "wav.scp").read_text().splitlines():
            key, path = line.split(maxsplit=1)
            if key == uid:
                return path
    raise KeyError(uid)


def ge2e_only(text):
    start, end = text.index("  - use: ecapa"), text.index("protocols:")
    return text[:start] + text[end:]


def test_missing_utterances_are_refused_before_any_audio_is_anonymized(recipe, tmp_path):
    folders = [f for f in recipe.anonymized_folders if not f.endswith("dev_trials_m_anon")]
    with pytest.raises(
        DataError, match=r"\d+ of the \d+ utterances to anonymize have no audio in .*_anon and 2 more sources"
    ):
        run(ge2e_only(experiment_text(recipe, tmp_path, folders)), tmp_path)
    written = (
        list((tmp_path / "cache" / "anonymize").rglob("*.wav")) if (tmp_path / "cache" / "anonymize").exists() else []
    )
    assert written == []  # refused before the first utterance, not part-way through


def test_regenerated_external_files_are_not_served_from_the_cache(make_recipe, tmp_path):
    import shutil

    own = make_recipe(tmp_path / "own", speakers=8, utterances=4)
    text = ge2e_only(experiment_text(own, tmp_path))
    first = run(text, tmp_path)
    assert first.executed["anonymize"] == ["external (evaluation)"]
    again = Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True
    ).run()
    assert "anonymize" not in again.executed  # unchanged files: reused
    # The other toolkit writes new files in the same folders (same size and names: only bytes differ).
    victim = Path(_path(own, first.anonymized["external"].utterances[0].id))
    audio, rate = sf.read(victim, dtype="float32")
    sf.write(victim, np.roll(audio, 17), rate, subtype="PCM_16")
    shutil.rmtree(tmp_path / "run")
    third = run(text, tmp_path)
    assert third.executed["anonymize"] == ["external (evaluation)"]


def test_anonymized_copies_loaded_as_corpus_data_get_a_hint_about_sets(recipe, tmp_path):
    # Without `sets`, the kaldi corpus also loads the _anon folders, so shared ids get folder prefixes.
    with pytest.raises(
        DataError, match=r"prefixed with the folder name .*list only the original folders in its `sets`"
    ):
        run(experiment_text(recipe, tmp_path, sets=""), tmp_path)


def test_the_cli_ends_a_missing_folder_with_one_sentence_and_exit_code_2(recipe, tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(experiment_text(recipe, tmp_path, [str(tmp_path / "no-such-folder")]))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vpeval",
            "--experiment",
            str(path),
            "--cache",
            str(tmp_path / "cache"),
            "--output",
            str(tmp_path / "run"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    # caught when the experiment loads (Plugin.missing_paths), before any stage runs
    assert "line 14 (anonymizers[0].params)" in done.stderr and "no-such-folder has no wav.scp" in done.stderr
    assert not (tmp_path / "run").exists()
    assert "Traceback" not in done.stderr


def test_precomputed_after_another_step_is_refused_at_validate(recipe, tmp_path):
    """Before, mcadams then precomputed ran and mcadams' output was discarded in silence (issue 38)."""
    from vpeval.errors import ConfigError

    if "mcadams" not in get_plugin_manager().registry.get("anonymizer", {}):
        pytest.skip("needs the installed anonymizer mcadams")
    text = experiment_text(recipe, tmp_path)
    step = f"{{use: precomputed, params: {{folders: {json.dumps(recipe.anonymized_folders)}}}}}"
    chained = text.replace(
        f"  - {{use: precomputed, label: external, params: {{folders: {json.dumps(recipe.anonymized_folders)}}}}}",
        f"  - {{label: external, chain: [{{use: mcadams}}, {step}]}}",
    )
    assert chained != text
    with pytest.raises(
        ConfigError, match=r"anonymizers\[0\]\.chain\[1\]\): anonymizer precomputed returns stored speech"
    ):
        load_experiment_text(chained, "exp.yaml")
    first = chained.replace(f"[{{use: mcadams}}, {step}]", f"[{step}, {{use: mcadams}}]")
    load_experiment_text(first, "exp.yaml")
