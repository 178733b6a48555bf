"""A throwaway cache (--no-cache) costs less where it cannot change a number (issue 39 item 5): a submission's
stored files are hard-linked into it instead of written again, and it is removed beside the report's drawing."""

from __future__ import annotations

import os
import shutil
import threading
import types

import numpy as np
import pytest
import soundfile as sf
from fakes import EXPERIMENT, run_anonymize_task

from vpeval import hookimpl
from vpeval.api import Anonymizer
from vpeval.audio import read_audio
from vpeval.config import load_experiment_text
from vpeval.run import anonymize_task
from vpeval.run.runner import Runner


class StoredCopy(Anonymizer):
    """Returns its stored file as stored (the `precomputed` anonymizer's contract, one file for every utterance)."""

    name = "stored-copy"
    sample_rate = None
    output_subtype = "FLOAT"
    reads_input = False
    path = ""  # set by each test

    def anonymize(self, audio, sample_rate, voice):
        return read_audio(self.path)[0]

    def output_rate(self, sample_rate, voice):
        return sf.info(self.path).samplerate

    def stored_file(self, utterance):
        return self.path


class Halve(Anonymizer):
    name = "halve"

    def anonymize(self, audio, sample_rate, voice):
        return audio * 0.5


@pytest.fixture
def manager(fake_plugins):
    from vpeval.plugins import PluginManager

    module = types.ModuleType("throwaway_cache_plugins")
    module.register_anonymizers = hookimpl(lambda register: [register(c) for c in (StoredCopy, Halve)])
    registry = PluginManager()
    registry.register_module(fake_plugins, "vpeval-fakes", "1.0")
    registry.register_module(module, "vpeval-throwaway-checks", "1.0")
    assert not registry.broken, registry.broken
    return registry


def anonymize(manager, tmp_path, chain: list[str], stored, link_stored: bool, name: str = "partial"):
    """The chain's file for utterance u1 (its input a 16 kHz tone), `stored` as the submission's file."""
    StoredCopy.path = str(stored)
    return run_anonymize_task(manager, tmp_path, chain, tmp_path / name, link_stored=link_stored)


def submission_file(tmp_path, channels: int = 1):
    noise = np.random.default_rng(3).normal(0, 0.2, (12000, channels)).clip(-0.9, 0.9)
    path = tmp_path / f"submission-{channels}.wav"
    sf.write(path, noise[:, 0] if channels == 1 else noise, 16000, subtype="PCM_16")
    return path


def test_a_throwaway_cache_holds_the_submissions_file_itself_with_the_samples_a_copy_holds(manager, tmp_path):
    stored = submission_file(tmp_path)
    copy = anonymize(manager, tmp_path, ["stored-copy"], stored, link_stored=False, name="kept")
    link = anonymize(manager, tmp_path, ["stored-copy"], stored, link_stored=True, name="throwaway")
    assert os.path.samefile(link, stored) and not os.path.samefile(copy, stored)
    assert sf.info(copy).subtype == "FLOAT"  # a kept cache's copy, as before
    (a, rate_a), (b, rate_b) = read_audio(copy), read_audio(link)
    assert rate_a == rate_b == 16000 and a.dtype == b.dtype == np.float32 and np.array_equal(a, b)


def test_a_stored_file_is_copied_where_the_copy_would_read_differently(manager, tmp_path):
    stereo = submission_file(tmp_path, channels=2)  # a reader that picks a channel would not get the mix down
    assert not os.path.samefile(anonymize(manager, tmp_path, ["stored-copy"], stereo, True, "stereo"), stereo)
    mono = submission_file(tmp_path)
    chained = anonymize(manager, tmp_path, ["stored-copy", "halve"], mono, True, "chained")  # not the stored samples
    assert not os.path.samefile(chained, mono)
    assert np.allclose(read_audio(chained)[0], read_audio(mono)[0] * 0.5, atol=1 / 32768)  # halve writes 16 bits
    target = tmp_path / "other.wav"
    samples = read_audio(mono)[0]
    assert not anonymize_task.linked(str(mono), samples * 0.5, 16000, target) and not target.exists()
    assert not anonymize_task.linked(str(mono), samples, 8000, target) and not target.exists()


def test_the_throwaway_cache_is_removed_beside_the_report_and_gone_when_the_run_returns(
    tmp_path, fake_plugins, monkeypatch
):
    import vpeval.report.writer as writer

    removing, real_rmtree, real_outputs = threading.Event(), shutil.rmtree, writer.write_outputs
    throwaway: list[str] = []

    def rmtree(path, *args, **kwargs):
        if throwaway and str(path) == throwaway[0]:
            removing.set()
        return real_rmtree(path, *args, **kwargs)

    overlapped = []

    def write_outputs(*args, **kwargs):
        real_outputs(*args, **kwargs)
        overlapped.append(removing.wait(10))  # the old runner removed it only after the report

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    monkeypatch.setattr(writer, "write_outputs", write_outputs)
    runner = Runner(load_experiment_text(EXPERIMENT, "exp.yaml"), no_cache=True, output=tmp_path / "run", quiet=True)
    throwaway.append(str(runner.cache.root))
    result = runner.run()
    assert overlapped == [True] and not os.path.exists(throwaway[0])
    assert (result.folder / "report.md").is_file() and result.rows


def test_the_eer_stages_of_several_score_sets_run_on_the_workers_with_the_same_bootstrap_numbers(
    tmp_path, fake_plugins, monkeypatch
):
    from vpeval_scoring.score_metric import ScoreMetric

    compute, pids = ScoreMetric.compute, tmp_path / "pids"
    pids.mkdir()

    def noted(self, inputs):  # a forked worker cannot append to this process's lists: a file per call
        (pids / f"{os.getpid()}-{len(list(pids.iterdir()))}-{id(inputs)}").touch()
        return compute(self, inputs)

    monkeypatch.setattr(ScoreMetric, "compute", noted)
    text = EXPERIMENT.replace("metrics: [fake-eer]", "metrics: [{use: eer, params: {bootstrap: 200}}]")
    rows = {}
    for workers in (1, 2):
        exp = load_experiment_text(text + f"workers: {workers}\n", "exp.yaml")
        folders = {"cache_root": tmp_path / f"cache{workers}", "output": tmp_path / f"run{workers}"}
        result = Runner(exp, quiet=True, **folders).run()
        rows[workers] = [(r["protocol"], r["gender"], r["value"], r["ci_low"], r["ci_high"]) for r in result.rows]
    assert rows[1] == rows[2] and any(r[3] is not None for r in rows[1])  # intervals drawn, the same on two workers
    computed_by = [int(p.name.split("-")[0]) for p in pids.iterdir()]
    assert any(pid != os.getpid() for pid in computed_by)  # the old runner computed every one in this process
