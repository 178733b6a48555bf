"""`vpeval report --output` onto what is not a plain new file (issue 38, part 5).

Before: a symbolic link was replaced by a regular file (the file it led to kept its old table), /dev/full
was offered "--overwrite to replace it", and with --overwrite a FIFO or device became a regular file.
"""

import os

import pytest

from tests.test_report_broken_runs import good_run, refused, vpeval


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    run = good_run(tmp_path / "run")
    (tmp_path / "paper").mkdir()
    table = tmp_path / "paper" / "table.md"
    table.write_text("old table\n")
    link = tmp_path / "table-link.md"
    link.symlink_to(table)
    assert "already exists" in refused(vpeval("report", run, "--output", link))
    result = vpeval("report", run, "--output", link, "--overwrite")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(table)
    assert "31.50" in table.read_text()
    assert sorted(p.name for p in table.parent.iterdir()) == ["table.md"]  # no temporary file left


def test_a_dangling_link_creates_its_target(tmp_path):
    run = good_run(tmp_path / "run")
    link = tmp_path / "out.md"
    link.symlink_to(tmp_path / "target.md")
    assert vpeval("report", run, "--output", link).exit_code == 0
    assert link.is_symlink() and "31.50" in (tmp_path / "target.md").read_text()


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_fifo_or_a_device_is_refused_even_with_overwrite(tmp_path, overwrite):
    run = good_run(tmp_path / "run")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    line = refused(vpeval("report", run, "--output", fifo, *overwrite))
    assert line.startswith(f"Error: --output {fifo} is a named pipe") and "--overwrite" not in line
    assert fifo.is_fifo()
    line = refused(vpeval("report", run, "--output", "/dev/full", *overwrite))
    assert line.startswith("Error: --output /dev/full is a device") and "--overwrite" not in line
