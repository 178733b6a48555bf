"""latest_checkpoint picks the folder the VoicePrivacy toolkits' utils.scan_checkpoint picks (VPC 2024
commit 400de3a, utils/path_management.py): the largest whole number after the prefix, else none."""

from __future__ import annotations

from vpeval_sbfolder.checkpoints import latest_checkpoint


def test_the_largest_whole_number_after_the_prefix(tmp_path):
    for name in ("CKPT+2", "CKPT+10", "CKPT+9", "other"):
        (tmp_path / name).mkdir()
    assert latest_checkpoint(tmp_path, "CKPT+") == tmp_path / "CKPT+10"  # 10 > 9 as numbers, not as text
    assert latest_checkpoint(tmp_path, "CKPT") == tmp_path / "CKPT+10"  # SER's prefix: int("+10")


def test_none_without_checkpoints_or_with_a_name_that_is_no_number(tmp_path):
    assert latest_checkpoint(tmp_path, "CKPT+") is None
    assert latest_checkpoint(tmp_path / "absent", "CKPT+") is None
    for name in ("CKPT+3", "CKPT+2024-03-01+10-00-00+00"):  # speechbrain's own names: the toolkit falls back
        (tmp_path / name).mkdir()
    assert latest_checkpoint(tmp_path, "CKPT+") is None
