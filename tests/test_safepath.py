"""Paths that are not regular files are refused by os.stat before anything opens them.

Opening a FIFO waits for a writer forever and /dev/zero never ends, so the checks that could hang run in
a subprocess with a timeout: a regression fails the test instead of hanging the suite.
"""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import soundfile

from vpeval.errors import ConfigError, DataError
from vpeval.safepath import PathProblem, regular_file, stat_regular

HANG = 30  # seconds: the refusals take well under one; reaching this means something opened and waited


def _reason(path, **kwargs) -> str:
    with pytest.raises(PathProblem) as info:
        stat_regular(path, **kwargs)
    return info.value.reason


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_devices_are_refused(device):
    assert _reason(device).startswith("it is a device")


def test_fifo_folder_socket_and_broken_link_are_named(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert _reason(fifo).startswith("it is a named pipe (FIFO") and "save the data to a file" in _reason(fifo)
    assert _reason(tmp_path).startswith("it is a folder") and "a file inside it" in _reason(tmp_path)
    sock = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock))
        assert _reason(sock).startswith("it is a socket")
    (tmp_path / "gone").symlink_to(tmp_path / "nothing")
    assert _reason(tmp_path / "gone") == f"it is a link to {tmp_path / 'nothing'}, which does not exist"
    assert _reason(tmp_path / "missing") == "it does not exist"


def test_a_link_is_judged_by_its_target(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    assert "device" in _reason(tmp_path / "zero.yaml") and "the link leads to /dev/zero" in _reason(
        tmp_path / "zero.yaml"
    )
    (tmp_path / "real.yaml").write_text("name: x\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert regular_file(tmp_path / "link.yaml", "Experiment file") == tmp_path / "link.yaml"


def test_size_limit_and_the_sentence(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"x" * 3000)
    assert stat_regular(path, max_bytes=3000).st_size == 3000
    with pytest.raises(ConfigError) as info:
        regular_file(path, "Manifest", max_bytes=1000, error=ConfigError)
    assert str(info.value) == (
        f"Manifest {path} cannot be used: it is 2.93 KB, over the 1000 bytes limit for such a file; "
        "check that this is the right file."
    )
    with pytest.raises(DataError, match=rf"^Manifest {tmp_path} cannot be used: it is a folder"):
        regular_file(tmp_path, "Manifest")


def _vpeval(*args, timeout=HANG):
    return subprocess.run([sys.executable, "-m", "vpeval.cli", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("kind", ["/dev/zero", "/dev/urandom", "fifo", "link-to-zero"])
def test_validate_refuses_what_is_not_a_file_in_time_with_exit_2(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "exp.yaml"
        os.mkfifo(path)
    elif kind == "link-to-zero":
        path = tmp_path / "exp.yaml"
        path.symlink_to("/dev/zero")
    else:
        path = kind
    for args in (["validate", str(path)], ["--experiment", str(path)]):
        result = _vpeval(*args)  # hung (FIFO) or read forever (/dev/zero) before
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"Error: Experiment file {path} cannot be used: it is a ")
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_experiment_file_of_many_megabytes_is_refused_unread(tmp_path):
    path = tmp_path / "exp.yaml"
    with open(path, "wb") as handle:
        handle.truncate(64 << 20)  # sparse: 64 MB of NUL bytes without writing them
    result = _vpeval("validate", str(path))
    assert result.returncode == 2 and "it is 64 MB, over the 4 MB limit" in result.stderr


def test_fingerprint_and_scan_of_a_corpus_listing_a_fifo_or_device_do_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.wav")
    (tmp_path / "zero.wav").symlink_to("/dev/zero")
    tone = np.sin(np.arange(8000) * 0.05).astype(np.float32) * 0.3  # one good file: a corpus of bad ones stops
    soundfile.write(tmp_path / "good.wav", tone, 16000)
    script = textwrap.dedent(f"""
        from vpeval.data.fingerprint import corpus_fingerprint
        from vpeval.data.scan import scan_corpus
        from vpeval.types import Corpus, Utterance

        corpus = Corpus("c", [Utterance(name, "s1", {str(tmp_path)!r} + "/" + name) \
for name in ("pipe.wav", "zero.wav", "good.wav")])
        for index in (None, {str(tmp_path / "index")!r}):
            corpus_fingerprint(corpus, index)
            _, skipped = scan_corpus(corpus, "skip", index)
            print(*[reason for _, _, reason in skipped], sep="\\n")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr
    reasons = result.stdout.splitlines()
    assert len(reasons) == 4 and all(
        r.startswith("it is a named pipe") or r.startswith("it is a device") for r in reasons
    )
