"""The math libraries' kernel pins (scripts/portable-kernels.sh) in cache keys and in what a run records.

Two runs of the same code gave WERs 1-4 points apart because CTranslate2 took another kernel path (issue 40):
a run under other pins must not reuse results computed under these, and a run's results name its CPU and pins.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vpeval import device as devices
from vpeval.config import load_experiment_text
from vpeval.device import KERNEL_ENV
from vpeval.run.runner import Runner

# A torch attacker (ecapa), a numpy metric (eer) and the WER metric (faster-whisper), on a generated corpus.
KEYED = """\
name: pins
seed: 1
data:
  corpus: {use: synth, params: {speakers: 4, utterances: 4}}
attackers: [{use: ecapa}]
protocols: [O-O]
metrics: [eer, wer]
"""
# The fake plugins of tests/fakes.py: a run in a second.
FAKE = """\
name: pins
seed: 7
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
anonymizers: [{use: fake-shift}]
attackers: [{use: fake-spectrum}]
protocols: [O-O, O-A]
metrics: [fake-eer]
"""


@pytest.fixture
def no_pins(monkeypatch):
    """None of the pins set (the environment of these tests may have sourced portable-kernels.sh)."""
    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def keys(tmp_path) -> dict[str, dict]:
    """The identities the cache keys hash, of a torch attacker, a numpy metric, the WER metric and the corpus."""
    exp = load_experiment_text(KEYED, str(tmp_path / "exp.yaml"))
    return {
        "attacker": exp.attackers[0].plugin.identity(),
        "eer": exp.metrics[0].identity(),
        "wer": exp.metrics[1].identity(),
        "corpus": exp.corpus.identity(),
    }


def test_the_six_pins_are_the_ones_portable_kernels_sets():
    script = (Path(__file__).parents[1] / "scripts" / "portable-kernels.sh").read_text()
    assert sorted(KERNEL_ENV) == sorted(re.findall(r"export (\w+)=", script))


def test_each_pin_changes_every_key_but_the_corpus_and_none_set_changes_none(tmp_path, no_pins):
    unset = keys(tmp_path)
    assert all("numerics" not in identity for identity in unset.values()), "without pins the keys are as before"
    seen = [unset]
    for name in KERNEL_ENV:
        for value in ("AVX2", "AVX512"):
            no_pins.setenv(name, value)
            now = keys(tmp_path)
            assert now["corpus"] == unset["corpus"], "a corpus is keyed by its content, not by the kernels"
            for plugin in ("attacker", "eer", "wer"):
                assert now[plugin]["numerics"][name] == value
                assert all(now[plugin] != before[plugin] for before in seen), (name, value, plugin)
            seen.append(now)
        no_pins.delenv(name)
    assert keys(tmp_path) == unset
    no_pins.setenv("MKL_CBWR", "")  # empty is unset, as the libraries read it
    assert keys(tmp_path) == unset


def test_pins_join_the_device_numerics_and_plugins_own_content_keys(no_pins):
    no_pins.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert devices.numerics_identity("cpu", "fp32") == {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert devices.numerics_identity("cuda:0", "bf16") == {
        "device": "cuda",
        "precision": "bf16",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    }


def run(tmp_path: Path):
    exp = load_experiment_text(FAKE, "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True, overwrite=True).run()


def test_a_run_names_its_cpu_and_pins_and_reruns_under_other_pins(tmp_path, fake_plugins, no_pins):
    no_pins.setenv("CT2_USE_MKL", "0")
    no_pins.setenv("OPENBLAS_CORETYPE", "Haswell")
    run(tmp_path)
    folder = tmp_path / "run"
    machine = json.loads((folder / "results.json").read_text())["machine"]
    assert machine["cpu"] and machine["cpu"] == devices.machine()["cpu"]
    assert machine["kernels"] == {
        name: {"CT2_USE_MKL": "0", "OPENBLAS_CORETYPE": "Haswell"}.get(name) for name in KERNEL_ENV
    }
    report = (folder / "report.md").read_text()
    assert f"Computed on {machine['cpu']}; kernels ATEN_CPU_CAPABILITY unset, " in report
    assert "OPENBLAS_CORETYPE=Haswell, CT2_USE_MKL=0, CT2_FORCE_CPU_ISA unset" in report
    assert not run(tmp_path).executed, "the same pins reuse every result"
    no_pins.setenv("CT2_USE_MKL", "1")
    again = run(tmp_path)
    assert set(again.executed) == {"anonymize", "train", "score", "metrics"}, "other kernels compute anew"
