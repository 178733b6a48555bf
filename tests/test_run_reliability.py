"""Reliability of the runner in one process: metric caching, resume, file names, output folders, pipes.

Each test here reproduces a finding of issue 11 or 12 and failed before its fix.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import soundfile as sf
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.run.runner import Runner

SMALL = """\
name: reliability
seed: 3
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""

TWO_ATTACKERS = """\
name: two-attackers
seed: 7
workers: 1  # the test counts compute() calls in this process; more workers compute EERs in forked ones
data:
  corpus: {use: fake-corpus, params: {speakers: 12, utterances: 6}}
  target_trials_per_speaker: 3
  nontarget_trials_per_speaker: 3
anonymizers: [fake-shift]
attackers:
  - {use: fake-spectrum, train_on: original}
  - {use: fake-spectrum, train_on: semi-informed, params: {bands: 24}}
protocols: [O-O, O-A, A-A]
enroll_utterances: [1, 2]
metrics: [fake-eer]
"""


def run(tmp_path: Path, text: str = SMALL, folder: str = "run", **kwargs):
    exp = load_experiment_text(text, "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / folder, quiet=True, **kwargs).run()


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# -- issue 11: metric results are cached by the key of their inputs ------------------------------


def test_changing_one_attacker_recomputes_only_its_metric_rows(tmp_path, fake_plugins, monkeypatch):
    original = fake_plugins.FakeEER.compute
    calls = []

    def counted(self, inputs):
        calls.append(inputs.attributes["attacker"])
        return original(self, inputs)

    monkeypatch.setattr(fake_plugins.FakeEER, "compute", counted)
    first = run(tmp_path, TWO_ATTACKERS)
    assert len(calls) == 2 * 3 * 2, "two attackers x three protocols x two N"
    again = run(tmp_path, TWO_ATTACKERS)
    assert len(calls) == 12 and not again.executed, "an identical rerun reuses every metric row"
    assert again.rows == first.rows, "rows read back from the cache equal the computed ones"

    changed = run(tmp_path, TWO_ATTACKERS.replace("params: {bands: 24}", "params: {bands: 20}"))
    assert calls[12:] == ["fake-spectrum(bands=20)/semi-informed"] * 6
    assert set(changed.executed) == {"train", "score", "metrics"}
    assert len(changed.executed["metrics"]) == 6
    assert all("bands=20" in label for label in changed.executed["metrics"])
    kept = [r for r in changed.rows if r["attacker"] == "fake-spectrum"]
    assert kept == [r for r in first.rows if r["attacker"] == "fake-spectrum"]


# -- resume: an utterance cut off while being written is redone ----------------------------------


def test_an_utterance_cut_off_while_written_is_not_adopted_on_resume(tmp_path, fake_plugins, monkeypatch):
    import vpeval.audio as audio_module

    reference = run(tmp_path / "ref")
    write = audio_module.write_audio
    count = {"n": 0}

    def dies_while_writing(path, audio, rate, *args, **kwargs):
        count["n"] += 1
        write(path, audio, rate, *args, **kwargs)
        if count["n"] == 5:  # the process is killed half-way through this file
            Path(path).write_bytes(Path(path).read_bytes()[:100])
            raise KeyboardInterrupt

    monkeypatch.setattr(audio_module, "write_audio", dies_while_writing)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "resume")
    monkeypatch.setattr(audio_module, "write_audio", write)
    resumed = run(tmp_path / "resume")
    assert resumed.rows == reference.rows


# -- issue 12 finding 3 and 14: file names are injective ------------------------------------------

TWO_LABELS = (
    SMALL.replace(
        "anonymizers: [fake-shift]",
        "anonymizers:\n  - {use: fake-shift, label: 'LABEL1'}\n"
        "  - {use: fake-shift, params: {low: 0.7, high: 0.8}, label: 'LABEL2'}",
    )
    + "protocols: [O-A]\n"
)


@pytest.mark.parametrize("first, second", [("x/y", "x y"), ("a" * 190 + "1", "a" * 190 + "2")])
def test_labels_that_sanitise_alike_get_their_own_score_file_and_data_folder(tmp_path, fake_plugins, first, second):
    result = run(tmp_path, TWO_LABELS.replace("LABEL1", first).replace("LABEL2", second))
    folder = tmp_path / "run"
    scores = sorted((folder / "scores").glob("*.scores"))
    assert len(scores) == 2, [p.name for p in scores]
    data = sorted(p.name for p in (folder / "data").iterdir())
    assert len(data) == 3, data  # two anonymized systems and the original
    eers = {r["anonymizer"]: r["value"] for r in result.rows if r["gender"] == "all"}
    texts = {p.read_text() for p in scores}
    assert len(texts) == 2 and len(set(eers.values())) == 2, "each file holds its own system's scores"
    assert all(len(p.name) < 255 for p in scores)


def test_utterance_ids_that_sanitise_alike_get_their_own_anonymized_file(tmp_path, fake_plugins):
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "audio", speakers=8, utterances=4, seconds=0.5)
    renamed = {}
    for speaker in corpus.speakers:  # s0003/a and s0003_a: one file name before sanitising was injective
        renamed.update({f"{speaker}-u000": f"{speaker}/a", f"{speaker}-u001": f"{speaker}_a"})
    with open(tmp_path / "manifest.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "path", "speaker", "gender"])
        for u in corpus:
            writer.writerow([renamed.get(u.id, u.id), u.path, u.speaker, u.gender])
    text = SMALL.replace(
        "{use: fake-corpus, params: {speakers: 8, utterances: 4}}",
        f"{{use: manifest, params: {{path: {tmp_path / 'manifest.csv'}}}}}",
    )
    result = run(tmp_path, text)
    anonymized = next(iter(result.anonymized.values()))
    pairs = [(old, new) for old, new in renamed.items() if new in anonymized]
    assert len(pairs) >= 4
    assert len({anonymized[new].path for _, new in pairs}) == len(pairs), "two utterances never share one file"
    for old, new in pairs:
        frames = sf.info(corpus[old].path).frames
        assert sf.info(anonymized[new].path).frames == frames, "each file holds its own utterance's audio"


# -- issue 12 finding 8: output folders ------------------------------------------------------------


def write_experiment(tmp_path: Path, text: str = SMALL) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


def test_a_folder_vpeval_did_not_create_is_never_written_without_overwrite(tmp_path, fake_plugins, monkeypatch):
    monkeypatch.chdir(tmp_path)
    user = tmp_path / "mine"
    (user / "data" / "evaluation_original").mkdir(parents=True)
    (user / "data" / "evaluation_original" / "text").write_text("my transcripts\n")
    (user / "report.md").write_text("my report\n")
    exp = write_experiment(tmp_path, SMALL + "output: mine\n")
    refused = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q")
    assert refused.exit_code == 2
    assert "mine" in refused.output and "--overwrite" in refused.output and "Traceback" not in refused.output
    assert (user / "report.md").read_text() == "my report\n"
    assert (user / "data" / "evaluation_original" / "text").read_text() == "my transcripts\n"
    assert sorted(p.name for p in user.iterdir()) == ["data", "report.md"], "nothing was written"
    allowed = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q", "--overwrite")
    assert allowed.exit_code == 0, allowed.output
    assert (user / "results.json").exists()


def test_a_folder_vpeval_created_is_reused_by_the_next_run(tmp_path, fake_plugins, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = write_experiment(tmp_path, SMALL + "output: runs/here\n")
    for _ in range(2):
        result = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q")
        assert result.exit_code == 0, result.output
    assert (tmp_path / "runs" / "here" / ".vpeval-run").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q", "--output", str(empty)).exit_code
        == 0
    )


@pytest.mark.parametrize("output", ["../elsewhere", "runs/../../elsewhere", "/tmp/vpeval-anywhere"])
def test_output_outside_the_working_directory_needs_the_command_line(tmp_path, fake_plugins, monkeypatch, output):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    exp = write_experiment(tmp_path, SMALL + f"output: {output}\n")
    for args in (["validate", str(exp)], ["--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q"]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert "--output" in result.output and "working directory" in result.output
    assert not (tmp_path / "elsewhere").exists()
    chosen = tmp_path / "elsewhere"
    result = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q", "--output", str(chosen))
    assert result.exit_code == 0, result.output
    assert (chosen / "results.json").exists()


def test_the_experiment_name_is_a_plain_name(tmp_path, fake_plugins):
    exp = write_experiment(tmp_path, SMALL.replace("name: reliability", "name: ../../x"))
    result = invoke("validate", str(exp))
    assert result.exit_code == 2 and "line 1 (name)" in result.output and "plain name" in result.output
    with pytest.raises(ConfigError):
        load_experiment_text(SMALL.replace("name: reliability", "name: a/b"))


# -- issue 12 finding 16: shell pipes only from the command line -----------------------------------


def kaldi_with_pipes(tmp_path: Path) -> Path:
    from vpeval.data.kaldi import write_data_dir
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "audio", speakers=8, utterances=4, seconds=0.5)
    folder = write_data_dir(corpus, tmp_path / "kaldi" / "all")
    lines = (folder / "wav.scp").read_text().splitlines()
    (folder / "wav.scp").write_text("".join(f"{line.split()[0]} cat {line.split()[1]} |\n" for line in lines))
    return tmp_path / "kaldi"


def test_allow_pipes_in_the_experiment_file_is_refused(tmp_path, fake_plugins):
    text = SMALL.replace("  target_trials", "  allow_pipes: true\n  target_trials", 1)
    result = invoke("validate", str(write_experiment(tmp_path, text)))
    assert result.exit_code == 2 and "--allow-pipes" in result.output and "line 5 (data.allow_pipes)" in result.output
    root = kaldi_with_pipes(tmp_path)
    text = SMALL.replace(
        "{use: fake-corpus, params: {speakers: 8, utterances: 4}}",
        f"{{use: kaldi, params: {{root: {root}, allow_pipes: true}}}}",
    )
    result = invoke("validate", str(write_experiment(tmp_path, text)))
    assert result.exit_code == 2 and "--allow-pipes" in result.output


def test_pipes_run_only_with_allow_pipes_on_the_command_line(tmp_path, fake_plugins, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = kaldi_with_pipes(tmp_path)
    text = SMALL.replace(
        "{use: fake-corpus, params: {speakers: 8, utterances: 4}}", f"{{use: kaldi, params: {{root: {root}}}}}"
    )
    exp = write_experiment(tmp_path, text + "output: run\n")
    refused = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q")
    assert refused.exit_code == 2 and "--allow-pipes" in refused.output and "Traceback" not in refused.output
    allowed = invoke("--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q", "--allow-pipes")
    assert allowed.exit_code == 0, allowed.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["rows"]


# -- names and cache entries, directly -------------------------------------------------------------


def test_file_names_are_injective_and_keep_plain_names():
    from vpeval.names import file_name, utterance_file

    texts = ["x/y", "x y", "x_y", "x__y", "a" * 200 + "1", "a" * 200 + "2", "", ".", "..", "ok-name", "ok-name~"]
    names = [file_name(t) for t in texts]
    assert len(set(names)) == len(texts)
    assert file_name("fake-shift__fake-spectrum__O-A__N1") == "fake-shift__fake-spectrum__O-A__N1"
    assert all(len(n) <= 180 and "/" not in n and n not in ("", ".", "..") for n in names)
    assert utterance_file("s0003/a") != utterance_file("s0003_a") and utterance_file("spk1-u2") == "spk1-u2.wav"


def test_a_build_folder_left_by_a_killed_run_is_removed_by_the_next_build(tmp_path):
    from vpeval.run.cache import StageCache

    cache = StageCache(tmp_path)
    key = cache.key("score", {"x": 1})
    stale = cache.path("score", key).parent / f".{key}.killed"
    stale.mkdir(parents=True)
    (stale / "scores.npz").write_bytes(b"half")
    with cache.lock("score", key), cache.build("score", key) as folder:
        (folder / "done").write_text("1")
    assert not stale.exists() and (cache.path("score", key) / "done").read_text() == "1"


def test_a_run_folder_of_a_vpeval_without_markers_is_still_vpevals(tmp_path, fake_plugins):
    from vpeval.run.folder import MARKER

    run(tmp_path)
    (tmp_path / "run" / MARKER).unlink()  # as an earlier vpeval left it
    run(tmp_path)
    assert (tmp_path / "run" / MARKER).is_file()


def test_an_anonymizer_cannot_take_the_label_of_original_speech(fake_plugins):
    with pytest.raises(ConfigError, match="labelled 'original'"):
        load_experiment_text(
            SMALL.replace("anonymizers: [fake-shift]", "anonymizers: [{use: fake-shift, label: original}]")
        )
