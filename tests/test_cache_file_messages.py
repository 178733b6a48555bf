"""A damaged file in vpeval's cache is named as a cache file, with the remedy: delete its entry or --force.

A user's own file (a checkpoint, an audio file) keeps a message about the user's file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vpeval.errors import BadAudioError, CorruptCacheError, MissingModelError, UserError, cache_entry_of

KEY = "ab" + "0123456789abcdef" * 3 + "0123456789abcd"  # 64 hex characters


def entry(cache: Path, stage: str = "train", partial: bool = False) -> Path:
    folder = cache / stage / KEY[:2] / (KEY + (".partial" if partial else ""))
    folder.mkdir(parents=True)
    return folder


def test_the_shape_of_a_path_says_whether_it_is_in_a_cache_entry(tmp_path):
    model = entry(tmp_path / "cache") / "model" / "weights.pt"
    found = cache_entry_of(model)
    assert found is not None and found.stage == "train" and found.folder == tmp_path / "cache" / "train" / KEY[:2] / KEY
    assert cache_entry_of(entry(tmp_path / "c2", "anonymize", partial=True) / "u1.wav").stage == "anonymize"
    assert cache_entry_of(tmp_path / "models" / KEY / "weights.pt") is None  # a hash-named folder of the user's
    assert cache_entry_of(tmp_path / "weights.pt") is None


def test_a_damaged_cached_checkpoint_says_delete_the_entry_or_force_the_stage(tmp_path):
    pytest.importorskip("torch")
    from vpeval.torchload import load_weights_only

    folder = entry(tmp_path / "cache")
    damaged = folder / "weights.pt"
    damaged.write_bytes(b"\x80\x02 not a checkpoint")
    with pytest.raises(CorruptCacheError) as caught:
        load_weights_only(damaged)
    message = str(caught.value)
    assert message.startswith(
        f"{damaged} is a file of vpeval's cache (the train stage), not one of yours, and it is damaged"
    )
    assert f"delete the cache entry folder {folder} or rerun with `--force train`" in message
    assert "from a source you trust" not in message
    assert isinstance(caught.value, UserError)  # one sentence and exit code 2 on the command line


def test_a_users_damaged_checkpoint_keeps_the_message_about_their_file(tmp_path):
    pytest.importorskip("torch")
    from vpeval.torchload import load_weights_only

    mine = tmp_path / "my-model.pt"
    mine.write_bytes(b"\x80\x02 not a checkpoint")
    with pytest.raises(MissingModelError, match="give a file saved with torch.save") as caught:
        load_weights_only(mine)
    assert "cache" not in str(caught.value)


def test_bad_audio_in_the_cache_names_the_entry_and_the_stage(tmp_path):
    wav = entry(tmp_path / "cache", "anonymize", partial=True) / "spk1-u1.wav"
    message = str(BadAudioError(str(wav), "its data is corrupt or cut short (unexpected end)"))
    assert message.startswith(f"Audio file {wav} cannot be used: its data is corrupt or cut short (unexpected end).")
    assert (
        f"It is a file of vpeval's cache (the anonymize stage), not one of yours: "
        f"delete the cache entry folder {wav.parent}" in message
    )
    assert "`--force anonymize`" in message
    assert (
        str(BadAudioError("/data/mine.wav", "it is silent"))
        == "Audio file /data/mine.wav cannot be used: it is silent."
    )


def test_a_corrupt_cache_error_raised_in_a_worker_arrives_as_its_sentence(tmp_path):
    import pickle

    from vpeval.errors import CorruptCacheError

    error = CorruptCacheError(str(tmp_path / "train" / "ab" / ("ab" * 32) / "model.pt"), "truncated")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is CorruptCacheError and str(again) == str(error) and again.reason == "truncated"
