"""precomputed: lookup by id, files kept as stored (rate, float samples), manifests, and the refusals
(missing ids, folders, pipes)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from vpeval.api import PluginContext, Voice
from vpeval.audio import read_audio
from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError, DataError
from vpeval_precomputed.anonymizer import Precomputed

RATE = 16000


def make(tmp_path, options=None, **params) -> Precomputed:
    anonymizer = Precomputed(
        Precomputed.Params(**params), PluginContext(seed=0, work_dir=tmp_path / "work", options=options or {})
    )
    anonymizer.prepare()
    return anonymizer


def voice(utterance, level="utterance", seed=0) -> Voice:
    key = utterance.id if level == "utterance" else utterance.speaker
    return Voice(key, level, np.random.default_rng(seed), utterance)


def test_returns_the_external_file_for_the_utterance_id_whatever_the_input(recipe, tmp_path):
    anonymizer = make(tmp_path, folders=recipe.anonymized_folders)
    utt = recipe.sets["dev_enrolls"].utterances[0]
    silence = np.zeros(RATE, dtype=np.float32)
    out = anonymizer.anonymize(silence, RATE, voice(utt))
    expected, _ = read_audio(_external_path(recipe, "dev_enrolls", utt.id))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.float32 and np.abs(out).max() > 0.05
    # The pseudo-speaker was chosen by the other toolkit: level and rng change nothing.
    again = anonymizer.anonymize(utt.load(RATE), RATE, voice(utt, level="speaker", seed=99))
    np.testing.assert_array_equal(out, again)


def _external_path(recipe, name, uid):
    for line in (recipe.anonymized(name) / "wav.scp").read_text().splitlines():
        key, path = line.split(maxsplit=1)
        if key == uid:
            return path
    raise KeyError(uid)


def test_other_sample_rates_are_kept_as_stored_for_the_evaluation_to_resample(recipe, tmp_path):
    anonymizer = make(tmp_path, folders=recipe.anonymized_folders)
    utt = recipe.sets["train"].utterances[3]
    path = _external_path(recipe, "train", utt.id)
    info = sf.info(path)
    assert info.samplerate == 22050
    for rate in (8000, 16000, 22050):
        out = anonymizer.anonymize(utt.load(RATE), rate, voice(utt))
        assert anonymizer.output_rate(rate, voice(utt)) == 22050 and len(out) == info.frames
        np.testing.assert_array_equal(out, read_audio(path)[0])


def test_float_files_come_out_unclipped_and_are_stored_as_float(recipe, tmp_path):
    utt = recipe.sets["train"].utterances[3]
    loud = tmp_path / "loud.wav"
    samples = read_audio(_external_path(recipe, "train", utt.id))[0]
    sf.write(loud, 1.7 * samples / np.abs(samples).max(), 22050, subtype="FLOAT")
    folder = tmp_path / "loud"
    folder.mkdir()
    (folder / "wav.scp").write_text(f"{utt.id} {loud}\n")
    (folder / "utt2spk").write_text(f"{utt.id} {utt.speaker}\n")
    anonymizer = make(tmp_path, folders=[str(folder)])
    out = anonymizer.anonymize(utt.load(RATE), RATE, voice(utt))
    assert np.abs(out).max() > 1.5 and Precomputed.output_subtype == "FLOAT"


def test_a_manifest_of_anonymized_files_works_like_a_folder(recipe, tmp_path):
    subset = recipe.sets["dev_trials_f"]
    rows = [{"id": u.id, "speaker": u.speaker, "path": _external_path(recipe, "dev_trials_f", u.id)} for u in subset]
    manifest = tmp_path / "anon.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    anonymizer = make(tmp_path, manifest=str(manifest))
    anonymizer.expect(subset.utterances)
    utt = subset.utterances[-1]
    np.testing.assert_array_equal(
        anonymizer.anonymize(utt.load(RATE), RATE, voice(utt)), read_audio(rows[-1]["path"])[0]
    )
    # folders and a manifest together: an id may come from one of them only.
    with pytest.raises(
        DataError, match=f"utterance {subset.utterances[0].id} is in .*dev_trials_f_anon and in .*anon.jsonl"
    ):
        make(tmp_path, folders=recipe.anonymized_folders, manifest=str(manifest))


def test_missing_ids_are_refused_before_any_audio_with_their_count_and_first_ids(recipe, tmp_path):
    anonymizer = make(tmp_path, folders=[str(recipe.anonymized("dev_enrolls"))])
    wanted = recipe.sets["dev_enrolls"].utterances + recipe.sets["dev_trials_m"].utterances
    missing = [u.id for u in recipe.sets["dev_trials_m"].utterances]
    with pytest.raises(DataError) as error:
        anonymizer.expect(wanted)
    message = str(error.value)
    assert f"{len(missing)} of the {len(wanted)} utterances to anonymize have no audio" in message
    assert ", ".join(missing[:5]) in message and "`folders`" in message
    assert "\n" not in message
    # Extra ids are normal: the enrollment folder alone covers the enrollment utterances.
    anonymizer.expect(recipe.sets["dev_enrolls"].utterances[:2])


def test_an_id_met_while_anonymizing_names_itself_and_a_kaldi_prefix_is_explained(recipe, tmp_path):
    anonymizer = make(tmp_path, folders=[str(recipe.anonymized("dev_enrolls"))])
    utt = recipe.sets["dev_trials_f"].utterances[0]
    with pytest.raises(DataError, match=f"utterance {utt.id} has no audio in .*dev_enrolls_anon"):
        anonymizer.anonymize(utt.load(RATE), RATE, voice(utt))
    enrolled = recipe.sets["dev_enrolls"].utterances[0]
    prefixed = enrolled.replace(id=f"dev_enrolls-{enrolled.id}")
    with pytest.raises(DataError, match=r"prefixed with the folder name dev_enrolls.*`sets`"):
        anonymizer.anonymize(enrolled.load(RATE), RATE, voice(prefixed))
    dashed = enrolled.replace(id=f"train-clean-360-{enrolled.id}")
    with pytest.raises(DataError, match=r"prefixed with the folder name train-clean-360,"):
        anonymizer.anonymize(enrolled.load(RATE), RATE, voice(dashed))


def test_a_listed_file_that_is_gone_is_refused_before_any_audio(recipe, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(recipe.anonymized("dev_enrolls"), folder)
    first = recipe.sets["dev_enrolls"].utterances[0]
    (folder / "wav.scp").write_text(
        (folder / "wav.scp")
        .read_text()
        .replace(_external_path(recipe, "dev_enrolls", first.id), str(tmp_path / "gone.wav"))
    )
    anonymizer = make(tmp_path, folders=[str(folder)])
    with pytest.raises(DataError, match=r"1 of the .* precomputed files do not exist \(first: .*gone.wav\)"):
        anonymizer.expect(recipe.sets["dev_enrolls"].utterances)


def test_a_missing_folder_or_manifest_names_the_field_and_the_path(tmp_path):
    with pytest.raises(DataError, match=r"`folders` names .*nowhere, which is not a folder"):
        make(tmp_path, folders=[str(tmp_path / "nowhere")])
    with pytest.raises(DataError, match=r"`manifest` names .*nothing.csv, which does not exist"):
        make(tmp_path, manifest=str(tmp_path / "nothing.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="has no wav.scp"):
        make(tmp_path, folders=[str(tmp_path / "empty")])


def test_params_need_a_source_and_the_experiment_file_says_where():
    with pytest.raises(ValidationError):
        Precomputed.Params()
    text = (
        "name: x\ndata:\n  corpus: {use: manifest, params: {path: m.csv}}\n"
        "anonymizers:\n  - {use: precomputed}\nattackers: []\n"
    )
    with pytest.raises(ConfigError, match=r"line 5.*`folders`.*`manifest`"):
        load_experiment_text(text, "exp.yaml")


def test_shell_pipes_are_refused_unless_allowed(recipe, tmp_path):
    utt = recipe.sets["dev_enrolls"].utterances[0]
    path = _external_path(recipe, "dev_enrolls", utt.id)
    folder = tmp_path / "piped"
    folder.mkdir()
    (folder / "wav.scp").write_text(f"{utt.id} cat {path} |\n")
    (folder / "utt2spk").write_text(f"{utt.id} {utt.speaker}\n")
    with pytest.raises(DataError, match=r"wav.scp line 1 is a shell pipe.*--allow-pipes"):
        make(tmp_path / "refused", folders=[str(folder)])
    # Only the command line allows them (the runner puts --allow-pipes into the context's options).
    assert "allow_pipes" not in Precomputed.Params.model_fields
    allowed = make(tmp_path / "run", options={"allow_pipes": True}, folders=[str(folder)])
    np.testing.assert_array_equal(allowed.anonymize(utt.load(RATE), RATE, voice(utt)), read_audio(path)[0])


def test_submitted_files_identical_to_the_originals_are_noted(recipe, tmp_path, caplog):
    """Before, a submission that copied the original audio ran without a word (issue 38)."""
    subset = recipe.sets["dev_trials_f"]
    copies = tmp_path / "copies"
    copies.mkdir()
    rows = []
    for k, u in enumerate(subset):
        path = _external_path(recipe, "dev_trials_f", u.id)
        if k < 2:  # two files are the originals: one copied, one the same file
            path = shutil.copyfile(u.path, copies / f"{u.id}.wav") if k == 0 else u.path
        rows.append({"id": u.id, "speaker": u.speaker, "path": str(path)})
    manifest = tmp_path / "anon.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level("WARNING"):
        make(tmp_path, manifest=str(manifest)).expect(subset.utterances)
    (note,) = [r.getMessage() for r in caplog.records if "byte-identical" in r.getMessage()]
    first = subset.utterances[0]
    assert note.startswith(f"precomputed: 2 of the {len(subset)} submitted files are byte-identical to their original")
    assert f"{first.id}: {copies / (first.id + '.wav')} = {first.path}" in note
    caplog.clear()
    with caplog.at_level("WARNING"):
        make(tmp_path, folders=recipe.anonymized_folders).expect(subset.utterances)
    assert not [r for r in caplog.records if "byte-identical" in r.getMessage()]
