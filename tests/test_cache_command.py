"""`vpeval cache` (sizes by stage and plugin, prune by age or by the experiments that use an entry) and
`vpeval validate --plan`, on the cache of a small run with the fake plugins."""

import json
import os
import sys
import time

import pytest
from click.testing import CliRunner
from tests_runner_helpers import SMALL, run_small

from vpeval.cli import main
from vpeval.run.cache import ABOUT, StageCache

pytest.importorskip("vpeval_cacheadmin")
from vpeval_cacheadmin import planned_steps, scan  # noqa: E402

STEPS = 8  # the small run: 1 anonymize, 1 train, 3 score (O-O, O-A, A-A), 3 metrics


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def small(tmp_path, fake_plugins):
    """The small experiment's file and its cache folder (not yet built)."""
    path = tmp_path / "small.yaml"
    path.write_text(SMALL.format(seed=0))
    return path, tmp_path / "cache"


def plan_lines(result):
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("  ")]


def test_plan_before_and_after_a_run(small, tmp_path):
    path, cache = small
    before = plan_lines(invoke("validate", path, "--plan", "--cache", cache))
    assert len(before) == STEPS and all(line.endswith(": to compute") for line in before)
    result = run_small(tmp_path)
    after = plan_lines(invoke("validate", path, "--plan", "--cache", cache))
    assert len(after) == STEPS and all(": cached (built in " in line for line in after), after
    # The plan's steps are the run's, with the run's labels and the keys of the entries it wrote.
    computed = sorted((stage, label) for stage, labels in result.executed.items() for label in labels)
    exp = _load(path)
    steps = planned_steps(exp, cache)
    assert sorted((stage, label) for (stage, _key), label in steps.items()) == computed
    assert set(steps) == {(e.stage, e.key) for e in scan(cache)}
    assert "8 cached" in invoke("validate", path, "--plan", "--cache", cache).output


WIDE = SMALL.replace(
    "attackers: [fake-spectrum]\nmetrics: [fake-eer]",
    "attackers: [fake-spectrum, {{use: fake-inverter, train_on: anonymized, label: inv}}]\n"
    "metrics: [fake-eer, fake-cosine, fake-separation]",
)


def test_the_plan_holds_every_key_of_a_run_with_every_kind_of_metric_input(fake_plugins, tmp_path):
    """Attackers trained on the original and on the anonymized speech (the train part anonymized too), metrics
    of scores, embeddings and similarity: the plan's keys are exactly the entries the run writes."""
    from vpeval.config import load_experiment_text
    from vpeval.run.runner import Runner

    exp = load_experiment_text(WIDE.format(seed=3), "wide.yaml")
    assert "fake-inverter" in [a.plugin.use for a in exp.attackers] and len(exp.metrics) == 3
    steps = planned_steps(exp, tmp_path / "cache")
    result = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    assert set(steps) == {(e.stage, e.key) for e in scan(tmp_path / "cache")}
    computed = sorted((stage, label) for stage, labels in result.executed.items() for label in labels)
    assert sorted((stage, label) for (stage, _key), label in steps.items()) == computed
    assert {stage for stage, _ in steps} == {"anonymize", "train", "score", "metrics"}


def test_without_the_library_the_commands_say_what_to_install(monkeypatch, small):
    monkeypatch.setitem(sys.modules, "vpeval_cacheadmin", None)  # as if it were not installed
    for args in (["cache"], ["validate", small[0], "--plan"]):
        result = invoke(*args)
        assert result.exit_code == 2 and "pip install -e lib/cacheadmin" in result.output, result.output


def _load(path):
    from vpeval.config import load_experiment

    return load_experiment(str(path))


def test_plan_after_a_change_computes_only_what_changed_and_shows_the_earlier_time(small, tmp_path):
    path, cache = small
    run_small(tmp_path)
    changed = tmp_path / "changed.yaml"
    changed.write_text(SMALL.format(seed=0).replace("[fake-spectrum]", "[{use: fake-spectrum, params: {bands: 16}}]"))
    lines = plan_lines(invoke("validate", changed, "--plan", "--cache", cache))
    todo = [line for line in lines if ": to compute" in line]
    assert {line.split()[0] for line in todo} == {"train", "score", "metrics"}  # the anonymized speech is reused
    # Each step to compute shows the time of the cache's step of the same stage and plugins (bands=32).
    assert all(": to compute ('fake-" in line and "' took " in line for line in todo), todo
    assert "fake-spectrum(bands=16): to compute ('fake-spectrum' took " in "\n".join(todo)
    assert any(line.split()[0] == "anonymize" and ": cached" in line for line in lines)


def test_sizes_by_stage_and_plugin(small, tmp_path):
    _path, cache = small
    run_small(tmp_path)
    out = invoke("cache", "--cache", cache).output
    rows = {tuple(line.split()[:3]) for line in out.splitlines()}
    assert ("anonymize", "anonymizer", "fake-shift") in rows and ("train", "attacker", "fake-spectrum") in rows
    assert "work/ (not entries; never pruned)" in out and "unknown" not in out
    (entry,) = [e for e in scan(cache) if e.stage == "train"]
    assert entry.size == sum(f.stat().st_size for f in entry.path.rglob("*") if f.is_file())
    note = json.loads((entry.path.parent / (entry.key + ABOUT)).read_text())
    assert note["stage"] == "train" and note["plugins"] == ["attacker fake-spectrum"] and note["seconds"] >= 0
    # An entry from before notes existed: still reused, listed as 'unknown'.
    (entry.path.parent / (entry.key + ABOUT)).unlink()
    assert "train" not in run_small(tmp_path).executed
    out = invoke("cache", "--cache", cache).output
    assert any(line.split()[:2] == ["train", "unknown"] for line in out.splitlines()), out
    plan = invoke("validate", small[0], "--plan", "--cache", cache).output
    assert "fake-spectrum: cached (build time unknown)" in plan


def test_prune_unused_by_lists_then_removes_only_what_no_given_experiment_uses(small, tmp_path):
    _path, cache = small
    run_small(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(SMALL.format(seed=0).replace("metrics: [fake-eer]", "metrics: []"))
    before = {(e.stage, e.key) for e in scan(cache)}
    listing = invoke("cache", "--cache", cache, "prune", "--unused-by", other)
    assert listing.exit_code == 0 and listing.output.count("would remove metrics") == 3
    assert {(e.stage, e.key) for e in scan(cache)} == before  # a listing removes nothing
    assert "removed 3 entries" in invoke("cache", "--cache", cache, "prune", "--unused-by", other, "--yes").output
    assert {e.stage for e in scan(cache)} == {"anonymize", "train", "score"}
    assert (cache / "work").is_dir() and (cache / "fingerprints").is_dir()
    rerun = run_small(tmp_path).executed  # only what was pruned is computed again
    assert set(rerun) == {"metrics"} and len(rerun["metrics"]) == 3


def test_prune_older_than_counts_from_the_last_build_or_reuse(small, tmp_path):
    _path, cache = small
    run_small(tmp_path)
    old = time.time() - 40 * 86400
    for entry in scan(cache):
        if entry.stage in ("score", "metrics"):
            os.utime(entry.path.parent / (entry.key + ABOUT), (old, old))
    run_small(tmp_path)  # reuses every entry: a reuse counts as a use
    assert "would remove 0 entries" in invoke("cache", "--cache", cache, "prune", "--older-than", "30d").output
    for entry in scan(cache):
        if entry.stage in ("score", "metrics"):
            os.utime(entry.path.parent / (entry.key + ABOUT), (old, old))
    out = invoke("cache", "--cache", cache, "prune", "--older-than", "30d", "--yes").output
    assert "removed 6 entries" in out
    assert {e.stage for e in scan(cache)} == {"anonymize", "train"}


def test_prune_skips_an_entry_being_built_and_never_leaves_the_cache(small, tmp_path):
    _path, cache = small
    run_small(tmp_path)
    (entry,) = [e for e in scan(cache) if e.stage == "train"]
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the cache's")
    (cache / "train" / "ff").mkdir()
    (cache / "train" / "ff" / ("f" * 64)).symlink_to(outside)  # an entry-like link pointing out of the cache
    with StageCache(cache).lock("train", entry.key):  # as a running vpeval holds it while building
        out = invoke("cache", "--cache", cache, "prune", "--older-than", "0s", "--yes").output
    assert f"skipped train {entry.key[:12]}" in out and f"pid {os.getpid()} is building it" in out
    assert entry.path.is_dir() and (outside / "keep.txt").exists()
    assert [e.stage for e in scan(cache)] == ["train"]


def test_prune_refuses_unclear_requests(small):
    _path, cache = small
    cache.mkdir()
    for args, words in (
        ((), "Say what to prune"),
        (("--older-than", "30 days"), "is not an age"),
        (("--unused-by",), "Say what to prune"),
    ):
        result = invoke("cache", "--cache", cache, "prune", *args)
        assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output
