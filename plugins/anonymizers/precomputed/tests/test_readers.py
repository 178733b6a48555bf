"""The precomputed set's files go through the core's text reader: same checks, same sentences.

Before, a BOM in the toolkit's wav.scp hid its first utterance (the id read as '\\ufeff<id>', so it
was "missing"), Latin-1 in utt2spk raised UnicodeDecodeError, `"speaker": ["x"]` in a manifest was
taken, and /dev/null as `manifest` was said not to exist.
"""

from __future__ import annotations

import json

import pytest

from vpeval.data.kaldi import write_data_dir
from vpeval.errors import DataError
from vpeval.testing.dummies import make_corpus
from vpeval_precomputed.index import load_precomputed


@pytest.fixture
def folder(tmp_path):
    corpus = make_corpus(tmp_path / "wav", speakers=2, utterances=2, seconds=0.15)
    return write_data_dir(corpus, tmp_path / "anon")


def _load(tmp_path, folders=(), manifest=None):
    return load_precomputed(
        [str(f) for f in folders], None if manifest is None else str(manifest), False, tmp_path / "pipes"
    )


def test_a_bom_and_crlf_in_the_toolkits_files_keep_every_id(folder, tmp_path):
    plain = _load(tmp_path, [folder])
    for name in ("wav.scp", "utt2spk", "spk2utt"):
        path = folder / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    again = _load(tmp_path, [folder])
    assert sorted(again.utterances) == sorted(plain.utterances) and "spk000-u000" in again


def test_latin1_in_utt2spk_names_the_line(folder, tmp_path):
    (folder / "spk2utt").unlink()
    lines = (folder / "utt2spk").read_text().splitlines()
    (folder / "utt2spk").write_bytes(("\n".join(lines[:2] + [lines[2] + "\xe9"] + lines[3:]) + "\n").encode("latin-1"))
    with pytest.raises(DataError, match=rf"{folder / 'utt2spk'} line 3 is not UTF-8"):
        _load(tmp_path, [folder])


def test_a_manifest_with_a_list_for_a_speaker_is_refused(folder, tmp_path):
    rows = [
        {"path": line.split()[1], "speaker": "x", "id": line.split()[0]}
        for line in (folder / "wav.scp").read_text().splitlines()
    ]
    rows[1]["speaker"] = ["x"]
    manifest = tmp_path / "anon.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=rf"Manifest {manifest} line 2 gives speaker \[\"x\"\], a list"):
        _load(tmp_path, manifest=manifest)


def test_dev_null_or_a_folder_as_the_manifest_is_named_for_what_it_is(folder, tmp_path):
    with pytest.raises(DataError, match=r"`manifest` names /dev/null, which is a device"):
        _load(tmp_path, manifest="/dev/null")
    with pytest.raises(DataError, match=rf"`manifest` names {folder}, which is a folder, not a file"):
        _load(tmp_path, manifest=folder)
    with pytest.raises(
        DataError, match=r"`folders` names /dev/null, which is a device \(such as /dev/null\), not a folder"
    ):
        _load(tmp_path, folders=["/dev/null"])


def test_the_same_file_under_two_ids_is_refused(folder, tmp_path):
    lines = (folder / "wav.scp").read_text().splitlines()
    (folder / "wav.scp").write_text(
        "\n".join(lines[:1] + [f"{lines[1].split()[0]} {lines[0].split()[1]}"] + lines[2:]) + "\n"
    )
    with pytest.raises(DataError, match=r"wav\.scp line 2 lists .*, which line 1 lists already"):
        _load(tmp_path, [folder])
