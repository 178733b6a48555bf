"""The inversion metric's pairs: an official trial list (VoxCeleb1-O or Kaldi), every pair within
max_pairs, a seeded sample beyond it, and the metric scoring exactly the pairs it is given."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import DataError
from vpeval.types import Utterance
from vpeval_spinv.attacker import SpInv
from vpeval_spinv.trials import bounded_pairs, read_pair_list

UTTERANCES = [
    Utterance(id=f"id1000{s}/v{k}/0000{k}", speaker=f"id1000{s}", path=f"/data/wav/id1000{s}/v{k}/0000{k}.wav")
    for s in range(3)
    for k in range(3)
]


def test_voxceleb1_o_and_kaldi_lists_name_utterances_by_id_or_path(tmp_path):
    vox = tmp_path / "veri_test.txt"
    vox.write_text("1 id10000/v0/00000.wav id10000/v1/00001.wav\n0 id10000/v0/00000.wav id10002/v2/00002.wav\n")
    kaldi = tmp_path / "trials"
    kaldi.write_text("id10001/v0/00000 id10001/v2/00002 target\nid10001/v0/00000 id10000/v1/00001 nontarget\n")
    # (test row, enrollment row): the test side is recovered, the enrollment side embedded by F
    assert read_pair_list(vox, UTTERANCES).tolist() == [[1, 0], [8, 0]]
    assert read_pair_list(kaldi, UTTERANCES).tolist() == [[5, 3], [1, 3]]


@pytest.mark.parametrize(
    "line, message",
    [
        ("1 id10000/v0/00000.wav id10009/v1/00001.wav", "id10009/v1/00001.wav is not an utterance"),
        ("1 id10000/v0/00000.wav id10002/v1/00001.wav", "labelled target but the corpus gives"),
        ("yes a b", "a trial line is"),
    ],
)
def test_bad_trial_lines_are_one_sentence_naming_file_and_line(tmp_path, line, message):
    path = tmp_path / "trials.txt"
    path.write_text("1 id10000/v0/00000.wav id10000/v1/00001.wav\n" + line + "\n")
    with pytest.raises(DataError, match=message) as error:
        read_pair_list(path, UTTERANCES)
    assert str(error.value).startswith(f"{path}:2: ") and "\n" not in str(error.value)


def test_every_pair_within_the_bound_else_a_seeded_sample_keeping_same_speaker_pairs():
    speakers = np.repeat([f"s{k}" for k in range(20)], 5)  # 100 utterances: 9900 pairs, 400 same-speaker
    assert bounded_pairs(speakers, 9900, np.random.default_rng(0)) is None
    pairs, note = bounded_pairs(speakers, 2000, np.random.default_rng(0))
    again, _ = bounded_pairs(speakers, 2000, np.random.default_rng(0))
    assert np.array_equal(pairs, again) and len(pairs) == 2000
    assert len({tuple(p) for p in pairs.tolist()}) == 2000 and (pairs[:, 0] != pairs[:, 1]).all()
    same = speakers[pairs[:, 0]] == speakers[pairs[:, 1]]
    assert same.sum() == 400  # every same-speaker pair fits in half the bound
    assert "2000 of all 9900 pairs" in note and "400 of 400 same-speaker" in note
    small, note = bounded_pairs(speakers, 300, np.random.default_rng(1))
    assert (speakers[small[:, 0]] == speakers[small[:, 1]]).sum() == 150 and "150 of 400 same-speaker" in note


def test_spinv_hands_its_pairs_and_the_metric_scores_exactly_them(tmp_path):
    from vpeval.types import Corpus

    corpus = Corpus("eval", UTTERANCES)
    attacker = SpInv(SpInv.Params(max_pairs=20), PluginContext(seed=0, work_dir=tmp_path))
    pairs, note = attacker.inversion_pairs(corpus)
    assert len(pairs) == 20 and "seeded sample" in note
    inversion = pytest.importorskip("vpeval_scoring.inversion_metric")
    metric = inversion.Inversion(inversion.Inversion.Params(), PluginContext(seed=0))
    rng = np.random.default_rng(0)
    recovered, target = rng.normal(size=(9, 4)), rng.normal(size=(9, 4))
    speakers = np.array([u.speaker for u in UTTERANCES])
    inputs = MetricInputs(recovered=recovered, target=target, speakers=speakers, pairs=pairs, pairs_note=note)
    eer = {r.metric: r for r in metric.compute(inputs)}["inversion-eer"]
    assert eer.details["pairs"] == 20 and eer.details["trials"] == note
    same = speakers[pairs[:, 0]] == speakers[pairs[:, 1]]
    assert eer.details["same_speaker_pairs"] == same.sum()
    listed = tmp_path / "trials"
    listed.write_text("id10000/v0/00000 id10000/v1/00001 target\n")
    attacker = SpInv(SpInv.Params(trial_list=str(listed)), PluginContext(seed=0, work_dir=tmp_path))
    pairs, note = attacker.inversion_pairs(corpus)
    assert pairs.tolist() == [[1, 0]] and str(listed) in note


def test_a_missing_trial_list_is_refused_at_validate_time(tmp_path):
    assert SpInv.check_experiment({"trial_list": str(tmp_path / "nope.txt")}, {}) == [
        f"trial_list {tmp_path / 'nope.txt'} is not a file; give a VoxCeleb1-O or Kaldi trial list file."
    ]
    (tmp_path / "t.txt").write_text("1 a b\n")
    assert SpInv.check_experiment({"trial_list": str(tmp_path / "t.txt")}, {}) == []
    assert SpInv.check_experiment({}, {}) == []
