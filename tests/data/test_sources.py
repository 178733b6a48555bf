"""The built-in corpus sources, including a tiny VoicePrivacy-layout folder with its own trial files."""

import pytest

from vpeval.api import PluginContext
from vpeval.builtin.sources import KaldiCorpus, ManifestCorpus
from vpeval.data.kaldi import write_data_dir
from vpeval.data.plan import PlanSettings, make_plan
from vpeval.data.scan import scan_corpus
from vpeval.errors import DataError
from vpeval.plugins import get_plugin_manager
from vpeval.testing.dummies import make_corpus

from .conftest import REAL, needs_real


def vpc_layout(root, corpus):
    """libri_dev_enrolls (utterances 0-1), libri_dev_trials_f/_m (2-5) of speakers 0-3; train: 4-5."""
    speakers = corpus.speakers
    evaluation, train = speakers[:4], speakers[4:]
    enroll_ids = [u.id for u in corpus if u.speaker in evaluation and int(u.id[-3:]) < 2]
    write_data_dir(corpus.subset(enroll_ids), root / "libri_dev_enrolls")
    write_data_dir(corpus.with_speakers(train), root / "train")
    lines = {}
    for g in "fm":
        spk_g = [s for s in evaluation if corpus.gender_of(s) == g]
        trial_utts = [u for u in corpus if u.speaker in spk_g and int(u.id[-3:]) >= 2]
        folder = write_data_dir(corpus.subset([u.id for u in trial_utts]), root / f"libri_dev_trials_{g}")
        lines[g] = [f"{s} {u.id} {'target' if u.speaker == s else 'nontarget'}" for s in spk_g for u in trial_utts]
        (folder / "trials").write_text("\n".join(lines[g]) + "\n")
    return lines


def kaldi_source(root, work, **params):
    params.setdefault("attacker_train", "train")
    params.setdefault(
        "evaluation", [{"enrolls": "libri_dev_enrolls", "trials": ["libri_dev_trials_f", "libri_dev_trials_m"]}]
    )
    return KaldiCorpus(KaldiCorpus.Params(root=str(root), **params), PluginContext(work_dir=work))


@pytest.fixture
def vpc(tmp_path):
    corpus = make_corpus(tmp_path / "wav", speakers=6, utterances=6, seconds=0.15)
    lines = vpc_layout(tmp_path / "data", corpus)
    return tmp_path / "data", corpus, lines


def test_both_sources_are_registered():
    pm = get_plugin_manager()
    assert pm.get("corpus", "manifest") is ManifestCorpus and pm.get("corpus", "kaldi") is KaldiCorpus


def test_voiceprivacy_layout_gives_its_own_single_utterance_plan(vpc, tmp_path):
    root, corpus, lines = vpc
    source = kaldi_source(root, tmp_path / "work")
    loaded = source.load()
    assert len(loaded) == len(corpus) and loaded.fingerprint
    plan = source.evaluation_plan(loaded, PlanSettings())
    trials = plan.trial_lists[1].trials
    written = lines["f"] + lines["m"]
    assert [f"{t.enroll_id} {t.test_id} {'target' if t.target else 'nontarget'}" for t in trials] == written
    for t in trials:
        assert t.enroll == tuple(f"{t.enroll_speaker}-u{k:03d}" for k in range(2))  # all enrollment utterances
        assert t.gender == corpus.gender_of(t.enroll_speaker) == corpus.gender_of(t.test_speaker)
    assert set(plan.train.speakers) | set(plan.validation.speakers if plan.validation else []) == set(
        corpus.speakers[4:]
    )
    assert not set(plan.enroll_ids) & set(plan.test_ids) and len(plan.evaluation) == 4 * 6


def test_without_evaluation_the_core_draws_trials(vpc, tmp_path):
    root, corpus, _ = vpc
    source = kaldi_source(root, tmp_path / "work", attacker_train=None, evaluation=None)
    loaded = source.load()
    assert source.evaluation_plan(loaded, PlanSettings()) is None
    assert len(make_plan(loaded, PlanSettings(attacker_train_speakers=2)).trial_lists[1]) > 0


def test_predefined_trials_refuse_multi_utterance_n_and_shared_speakers(vpc, tmp_path):
    root, corpus, _ = vpc
    source = kaldi_source(root, tmp_path / "work")
    loaded = source.load()
    with pytest.raises(DataError, match="N=5, but the kaldi corpus's `evaluation` trial files are single-utterance"):
        source.evaluation_plan(loaded, PlanSettings(enroll_utterances=[1, 5]))
    write_data_dir(corpus, root / "everyone")
    leaky = kaldi_source(root, tmp_path / "work2", attacker_train="everyone", sets=[])
    with pytest.raises(DataError, match="is in the attacker-train folder .* and in the evaluation folders"):
        leaky.evaluation_plan(leaky.load(), PlanSettings())


def test_trial_file_naming_an_unknown_utterance_names_the_line(vpc, tmp_path):
    root, _, lines = vpc
    trials = root / "libri_dev_trials_m" / "trials"
    trials.write_text(trials.read_text() + "spk001 nobody-u999 nontarget\n")
    source = kaldi_source(root, tmp_path / "work")
    with pytest.raises(DataError, match=rf"trials line {len(lines['m']) + 1} tests utterance nobody-u999"):
        source.evaluation_plan(source.load(), PlanSettings())


def test_colliding_ids_across_folders_get_prefixed_and_trials_still_resolve(vpc, tmp_path):
    root, corpus, lines = vpc
    female = root / "libri_dev_trials_f"
    copy = root / "libri_dev_trials_f_anon"
    copy.mkdir()
    for name in ("wav.scp", "utt2spk", "spk2utt", "spk2gender"):
        (copy / name).write_text((female / name).read_text())
    source = kaldi_source(root, tmp_path / "work")
    loaded = source.load()
    a_trial_utt = lines["f"][0].split()[1]
    assert f"libri_dev_trials_f-{a_trial_utt}" in loaded and f"libri_dev_trials_f_anon-{a_trial_utt}" in loaded
    plan = source.evaluation_plan(loaded, PlanSettings())
    assert plan.trial_lists[1].trials[0].test == (f"libri_dev_trials_f-{a_trial_utt}",)


def test_skipped_bad_audio_drops_only_its_trials(vpc, tmp_path):
    root, corpus, lines = vpc
    broken = lines["m"][0].split()[1]
    with open(corpus[broken].path, "wb") as f:
        f.write(b"not audio")
    source = kaldi_source(root, tmp_path / "work")
    loaded = source.load()
    with pytest.raises(Exception, match=broken):
        scan_corpus(loaded, "fail")
    kept, skipped = scan_corpus(loaded, "skip")
    assert [s[0] for s in skipped] == [broken] and kept.fingerprint != loaded.fingerprint
    plan = source.evaluation_plan(kept, PlanSettings())
    expected = [line for line in lines["f"] + lines["m"] if line.split()[1] != broken]
    assert len(plan.trial_lists[1]) == len(expected) and len(plan.notes) == len(lines["f"] + lines["m"]) - len(expected)


def test_kaldi_params_errors(vpc, tmp_path):
    root, _, _ = vpc
    with pytest.raises(DataError, match="has no data folder missing_set"):
        kaldi_source(root, tmp_path / "w", sets=["missing_set"]).load()
    with pytest.raises(DataError, match="is not a folder"):
        kaldi_source(root / "nope", tmp_path / "w").load()


@needs_real("vctk_autovc")
def test_manifest_source_loads_real_vctk_with_a_fingerprint(tmp_path):
    source = ManifestCorpus(
        ManifestCorpus.Params(path=str(REAL / "vctk_autovc" / "metadata.csv")), PluginContext(work_dir=tmp_path)
    )
    corpus = source.load()
    assert len(corpus) == 40 and len(corpus.fingerprint) == 64
    assert source.load().fingerprint == corpus.fingerprint
    assert source.evaluation_plan(corpus, PlanSettings()) is None
    checked, skipped = scan_corpus(corpus, "fail")
    assert not skipped and all(u.sample_rate == 16000 for u in checked)
    plan = make_plan(checked, PlanSettings(attacker_train_speakers=2, enroll_utterances=[1, 5]))
    # 10 utterances a speaker: pools of 5, so N = 5 has one distinct set per side: one target and one
    # non-target trial per speaker (not 10 copies of each), and a note says so.
    assert len(plan.evaluation.speakers) == 2 and len(plan.trial_lists[5]) == 2 * 2
    assert any("N=5" in note and "distinct" in note for note in plan.notes)


def test_experiment_level_allow_pipes_reaches_the_kaldi_source(small_corpus, tmp_path):
    folder = write_data_dir(small_corpus, tmp_path / "data" / "set")
    lines = (folder / "wav.scp").read_text().splitlines()
    (folder / "wav.scp").write_text("".join(f"{line.split()[0]} cat {line.split()[1]} |\n" for line in lines))
    params = KaldiCorpus.Params(root=str(tmp_path / "data"))
    with pytest.raises(DataError, match="line 1 is a shell pipe"):
        KaldiCorpus(params, PluginContext(work_dir=tmp_path / "w")).load()
    allowed = KaldiCorpus(params, PluginContext(work_dir=tmp_path / "w", options={"allow_pipes": True})).load()
    assert len(allowed) == len(small_corpus) and all(u.path.startswith(str(tmp_path / "w" / "pipes")) for u in allowed)


def test_an_utterance_in_both_the_enrolls_and_a_trials_folder_is_refused_with_both_lines(vpc, tmp_path):
    root, corpus, _ = vpc
    enrolls, trials = root / "libri_dev_enrolls", root / "libri_dev_trials_f"
    shared = (enrolls / "wav.scp").read_text().splitlines()[0]  # same id, same file
    utt = shared.split()[0]
    for name in ("wav.scp", "utt2spk"):
        line = next(row for row in (enrolls / name).read_text().splitlines() if row.split()[0] == utt)
        (trials / name).write_text((trials / name).read_text() + line + "\n")
    (trials / "spk2utt").unlink()  # it would no longer agree with utt2spk, which the reader refuses
    source = kaldi_source(root, tmp_path / "work")
    loaded = source.load()  # the shared id is prefixed per folder, so ids alone cannot tell
    count = len((trials / "wav.scp").read_text().splitlines())
    with pytest.raises(
        DataError,
        match=rf"trials_f/wav\.scp line {count} lists .*, which .*enrolls/wav\.scp line 1 lists for enrollment",
    ):
        source.evaluation_plan(loaded, PlanSettings())


def test_a_repeated_trial_line_is_refused_with_both_lines(vpc, tmp_path):
    root, _, lines = vpc
    trials = root / "libri_dev_trials_m" / "trials"
    trials.write_text(trials.read_text() + "\n" + lines["m"][1] + "\n")
    source = kaldi_source(root, tmp_path / "work")
    with pytest.raises(
        DataError,
        match=rf"trials line {len(lines['m']) + 2} repeats the trial '{' '.join(lines['m'][1].split()[:2])}' of",
    ):
        source.evaluation_plan(source.load(), PlanSettings())


@pytest.mark.parametrize("flip", ["target", "nontarget"])
def test_a_trial_label_that_contradicts_utt2spk_is_refused(vpc, tmp_path, flip):
    root, _, lines = vpc
    trials = root / "libri_dev_trials_f" / "trials"
    k = next(i for i, line in enumerate(lines["f"]) if line.split()[2] == flip)
    wrong = lines["f"][:]
    spk, utt, _ = wrong[k].split()
    wrong[k] = f"{spk} {utt} {'nontarget' if flip == 'target' else 'target'}"
    trials.write_text("\n".join(wrong) + "\n")
    source = kaldi_source(root, tmp_path / "work")
    with pytest.raises(DataError, match=rf"trials line {k + 1} labels '{spk} {utt}' .*utt2spk gives {utt} the speaker"):
        source.evaluation_plan(source.load(), PlanSettings())


def test_the_manifest_source_sees_a_same_size_rewrite_with_the_mtime_put_back(small_corpus, tmp_path, monkeypatch):
    # The path the runner takes: ManifestCorpus.load with the run cache's fingerprint index.
    import os
    import time

    import numpy as np

    from vpeval.data import fingerprint as fp

    monkeypatch.setattr(fp, "_clock_ns", lambda: time.time_ns() + 60 * 10**9, raising=False)  # rows trusted at once
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,speaker\n" + "".join(f"{u.path},{u.speaker}\n" for u in small_corpus))
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": str(tmp_path / "cache")})
    source = ManifestCorpus(ManifestCorpus.Params(path=str(manifest)), context)
    before = source.load().fingerprint
    assert source.load().fingerprint == before
    path = small_corpus.utterances[0].path
    stat = os.stat(path)
    data = bytearray(open(path, "rb").read())
    data[44:] = np.random.default_rng(1).integers(0, 256, len(data) - 44, dtype=np.uint8).tobytes()
    open(path, "r+b").write(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # touch -r
    assert os.stat(path).st_size == stat.st_size and os.stat(path).st_mtime_ns == stat.st_mtime_ns
    assert source.load().fingerprint != before


def test_a_manifest_that_does_not_exist_is_named_at_validate(tmp_path):
    """Before, `vpeval validate` passed (the Kaldi root was checked, the manifest not) and the run failed (issue 38)."""
    missing = ManifestCorpus.Params(path=str(tmp_path / "none.csv"), root=str(tmp_path / "no-audio"))
    assert ManifestCorpus.missing_paths(missing) == [
        f"the manifest {tmp_path / 'none.csv'} does not exist; set the manifest corpus's `path` to the file.",
        f"the manifest's audio root {tmp_path / 'no-audio'} is not a folder; set `root` to the audio folder.",
    ]
    present = tmp_path / "m.csv"
    present.write_text("path,speaker\n")
    assert ManifestCorpus.missing_paths(ManifestCorpus.Params(path=str(present), root=str(tmp_path))) == []


def test_validate_refuses_attacker_train_without_evaluation(vpc, tmp_path):
    """Without `evaluation` the folder would be loaded with the rest and its speakers split at random."""
    from click.testing import CliRunner

    from vpeval.cli import main

    root, _, _ = vpc
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"name: t\nseed: 0\ndata:\n  corpus:\n    use: kaldi\n    params:\n      root: {root}\n"
        "      sets: [libri_dev_enrolls]\n      attacker_train: train\n"
        "attackers: [{use: ge2e}]\nprotocols: [O-O]\nmetrics: [eer]\n"
    )
    result = CliRunner().invoke(main, ["validate", str(experiment)])
    assert result.exit_code == 2
    assert "line 6 (data.corpus.params): `attacker_train` (train) is used only with `evaluation` folders" in (
        result.output
    )
    kaldi_source(root, tmp_path / "work")  # with `evaluation` the same folder is accepted
