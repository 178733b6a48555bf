"""The staged runner end to end on fake plugins: outputs, caching, resuming, determinism."""

import json
from pathlib import Path

import pytest
import yaml
from fakes import EXPERIMENT

from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner


def run(tmp_path: Path, text: str = EXPERIMENT, **kwargs):
    exp = load_experiment_text(text, "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True, **kwargs).run()


def values(result):
    return {(r["anonymizer"], r["attacker"], r["protocol"], r["n"], r["gender"]): r["value"] for r in result.rows}


def test_outputs_and_anonymization_hides_the_fake_speakers(tmp_path, fake_plugins):
    result = run(tmp_path)
    folder = tmp_path / "run"
    for name in (
        "results.json",
        "results.csv",
        "report.md",
        "resolved.yaml",
        "run.log",
        "trials/N1.trials",
        "trials/N2.trials",
        "data/evaluation_fake-shift/wav.scp",
        "data/evaluation_original/utt2spk",
    ):
        assert (folder / name).exists(), name
    data = json.loads((folder / "results.json").read_text())
    coords = {(r["protocol"], r["n"], r["scenario"]) for r in data["rows"]}
    assert ("A-A", 2, "anonymized") in coords and ("O-O", 1, "original") in coords
    resolved = yaml.safe_load((folder / "resolved.yaml").read_text())
    assert (
        resolved["attackers"][1]["params"] == {"bands": 24}
        and resolved["attackers"][1]["distribution"] == "vpeval-fakes"
    )
    scores = list((folder / "scores").glob("*.scores"))
    assert scores and all(line.split()[3] in ("target", "nontarget") for line in scores[0].read_text().splitlines())
    v = values(result)
    oo = v[("fake-shift", "fake-spectrum", "O-O", 1, "all")]
    oa = v[("fake-shift", "fake-spectrum", "O-A", 1, "all")]
    assert oo < 40, "the fake attacker identifies the dummy speakers better than chance"
    assert oa > oo + 15, "the fake anonymizer hides them from an attacker trained on original speech"
    assert (
        "| anonymizer | attacker | trained on | O-O, N = 1 | O-A, N = 1 | A-A, N = 1 | O-O, N = 2 |"
        in (folder / "report.md").read_text()
    )


def test_second_run_reuses_everything_and_changed_attacker_reruns_only_itself(tmp_path, fake_plugins):
    first = run(tmp_path)
    calls = dict(fake_plugins.CALLS)
    second = run(tmp_path)
    assert fake_plugins.CALLS == calls, "an identical rerun computes nothing"
    assert values(second) == values(first)
    assert not second.executed
    changed = run(tmp_path, EXPERIMENT.replace("params: {bands: 24}", "params: {bands: 20}"))
    assert fake_plugins.CALLS["anonymize"] == calls["anonymize"], "changing an attacker never re-anonymizes"
    assert fake_plugins.CALLS["train"] == calls["train"] + 1
    assert set(changed.executed) == {"train", "score", "metrics"}
    assert all("semi-informed" in label for stage in changed.executed.values() for label in stage)


def test_changed_anonymizer_parameter_never_reuses_stale_audio(tmp_path, fake_plugins):
    run(tmp_path)
    second = run(tmp_path, EXPERIMENT.replace("{use: fake-shift}", "{use: fake-shift, params: {low: 0.6, high: 0.7}}"))
    assert "anonymize" in second.executed
    assert ("fake-shift(low=0.6,high=0.7)", "fake-spectrum", "O-A", 1, "all") in values(second)
    scores = tmp_path / "run" / "scores"
    old = (scores / "fake-shift__fake-spectrum__O-A__N1.scores").read_text()
    new = [p.read_text() for p in scores.glob("fake-shift_low=0.6_high=0.7___fake-spectrum__O-A__N1~*.scores")]
    assert len(new) == 1 and old != new[0]


def test_same_file_same_numbers_without_cache(tmp_path, fake_plugins):
    a = run(tmp_path / "a", no_cache=True)
    b = run(tmp_path / "b", no_cache=True)
    assert values(a) == values(b)


def test_interrupted_run_resumes_with_the_same_numbers(tmp_path, fake_plugins, monkeypatch):
    one = EXPERIMENT + "workers: 1\n"  # in this process, where the patched anonymize counts its calls
    reference = run(tmp_path / "ref", one)
    original = fake_plugins.FakeShift.anonymize
    count = {"n": 0}

    def dies_midway(self, audio, rate, voice):
        count["n"] += 1
        if count["n"] == 10:
            raise KeyboardInterrupt
        return original(self, audio, rate, voice)

    monkeypatch.setattr(fake_plugins.FakeShift, "anonymize", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "resume", one)
    partial = list((tmp_path / "resume" / "cache" / "anonymize").rglob("*.wav"))
    assert len(partial) == 9, "finished utterances survive the interruption"
    monkeypatch.setattr(fake_plugins.FakeShift, "anonymize", original)
    before = fake_plugins.CALLS["anonymize"]
    resumed = run(tmp_path / "resume", one)
    assert values(resumed) == values(reference)
    total = sum(
        len(p.read_text().splitlines()) for p in (tmp_path / "ref" / "cache" / "anonymize").rglob("manifest.jsonl")
    )
    assert fake_plugins.CALLS["anonymize"] - before == total - 9, "the resumed run continues, it does not start over"


def test_force_recomputes_a_stage(tmp_path, fake_plugins):
    run(tmp_path)
    again = run(tmp_path, force=("train",))
    assert set(again.executed) == {"train"}


def test_worker_processes_give_the_same_numbers(tmp_path, fake_plugins):
    serial = run(tmp_path / "serial")
    parallel = run(tmp_path / "parallel", EXPERIMENT + "workers: 2\n")
    assert values(serial) == values(parallel)
    for a, b in zip(
        sorted((tmp_path / "serial" / "cache" / "anonymize").rglob("*.wav")),
        sorted((tmp_path / "parallel" / "cache" / "anonymize").rglob("*.wav")),
    ):
        assert a.name == b.name and a.read_bytes() == b.read_bytes()


def test_init_from_fine_tunes_from_another_attackers_model(tmp_path, fake_plugins):
    text = EXPERIMENT.replace(
        "  - {use: fake-spectrum, train_on: semi-informed, params: {bands: 24}}",
        "  - {use: fake-spectrum, train_on: semi-informed, init_from: fake-spectrum, label: tuned}",
    )
    first = run(tmp_path, text)
    assert fake_plugins.CALLS.get("fine_tuned") == 1
    assert any("tuned" in label for label in first.executed["train"])
    again = run(tmp_path, text)
    assert not again.executed


def test_similarity_metrics_get_score_matrices(tmp_path, fake_plugins):
    result = run(tmp_path, EXPERIMENT.replace("metrics: [fake-eer]", "metrics: [fake-eer, fake-separation]"))
    rows = [r for r in result.rows if r["metric"] == "fake-separation"]
    by = {(r["attacker"], r["details"]["matrix"]): r["value"] for r in rows}
    assert {m for _, m in by} == {"O-O", "O-A", "A-A"}
    assert by[("fake-spectrum", "O-O")] > by[("fake-spectrum", "O-A")], "anonymization lowers same-speaker similarity"
