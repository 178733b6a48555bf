import random

import pytest
from pydantic import ValidationError

from vpeval.data.plan import PlanSettings, make_plan, read_sides, read_trial_list, write_sides, write_trials
from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance


def labels_corpus(speakers=16, utterances=40, sessions=4, name="labels"):
    """Labels only (make_plan never opens audio): speakers alternate f/m, utterances cycle sessions."""
    utts = [
        Utterance(
            id=f"s{s:02d}-{u:03d}",
            speaker=f"s{s:02d}",
            path=f"/none/s{s:02d}-{u:03d}.wav",
            gender="fm"[s % 2],
            session=f"c{u % sessions}" if sessions else None,
        )
        for s in range(speakers)
        for u in range(utterances)
    ]
    return Corpus(name, utts)


NS = [1, 5, 10, 15]


@pytest.fixture(scope="module")
def plan():
    return make_plan(labels_corpus(), PlanSettings(seed=3, enroll_utterances=NS))


def _as_rows(trial_list):
    return [
        (t.enroll, t.test, t.target, t.gender, t.enroll_speaker, t.test_speaker, t.enroll_id, t.test_id)
        for t in trial_list.trials
    ]


def test_attacker_train_validation_and_evaluation_speakers_are_disjoint_and_gender_balanced(plan):
    train, val, ev = set(plan.train.speakers), set(plan.validation.speakers), set(plan.evaluation.speakers)
    assert not (train & val or train & ev or val & ev)
    assert len(train | val) == 8 and len(ev) == 8 and len(val) == 1
    genders = [plan.evaluation.gender_of(s) for s in ev]
    assert genders.count("f") == genders.count("m") == 4
    for tl in plan.trial_lists.values():
        used = {uid for t in tl.trials for uid in t.enroll + t.test}
        assert used <= set(plan.enroll_ids) | set(plan.test_ids)
        assert not {plan.evaluation[u].speaker for u in used} & (train | val)


def test_enrollment_and_trial_utterances_are_disjoint_and_from_different_sessions(plan):
    assert not set(plan.enroll_ids) & set(plan.test_ids)
    assert sorted(plan.enroll_ids + plan.test_ids) == sorted(u.id for u in plan.evaluation)
    for tl in plan.trial_lists.values():
        for t in tl.trials:
            assert set(t.enroll) <= set(plan.enroll_ids) and set(t.test) <= set(plan.test_ids)
    ev = plan.evaluation
    for spk in ev.speakers:
        enroll_sessions = {ev[i].session for i in plan.enroll_ids if ev[i].speaker == spk}
        trial_sessions = {ev[i].session for i in plan.test_ids if ev[i].speaker == spk}
        assert enroll_sessions and trial_sessions and not enroll_sessions & trial_sessions


def test_sides_are_nested_across_n_for_every_trial(plan):
    lists = [plan.trial_lists[n].trials for n in (5, 10, 15)]
    assert len({len(tl) for tl in lists}) == 1
    for t5, t10, t15 in zip(*lists):
        assert (t5.target, t5.enroll_speaker, t5.test_speaker) == (t15.target, t15.enroll_speaker, t15.test_speaker)
        assert set(t5.enroll) < set(t10.enroll) < set(t15.enroll)
        assert set(t5.test) < set(t10.test) < set(t15.test)
        assert (len(t5.enroll), len(t10.test), len(t15.enroll)) == (5, 10, 15)


def test_single_utterance_trials_follow_voiceprivacy(plan):
    trials = plan.trial_lists[1].trials
    ev = plan.evaluation
    for t in trials:
        pool = tuple(sorted(i for i in plan.enroll_ids if ev[i].speaker == t.enroll_speaker))
        assert t.enroll == pool and t.enroll_id == t.enroll_speaker
        assert len(t.test) == 1 and t.test_id == t.test[0]
    assert sum(t.target for t in trials) == sum(not t.target for t in trials) == 8 * 10


def test_n_vs_n_makes_n1_one_utterance_against_one_nested_in_the_larger_sets():
    plan = make_plan(labels_corpus(), PlanSettings(seed=3, enroll_utterances=NS, n1_trials="n-vs-n"))
    ones, fives = plan.trial_lists[1].trials, plan.trial_lists[5].trials
    assert len(ones) == len(fives)
    for t1, t5 in zip(ones, fives):
        assert len(t1.enroll) == len(t1.test) == 1
        assert (t1.target, t1.enroll_speaker, t1.test_speaker) == (t5.target, t5.enroll_speaker, t5.test_speaker)
        assert set(t1.enroll) < set(t5.enroll) and set(t1.test) < set(t5.test)
    assert not any("two protocols" in note for note in plan.notes)


def test_a_run_mixing_voiceprivacy_n1_with_larger_n_says_so(plan):
    assert any("two protocols" in note and "n1_trials: n-vs-n" in note for note in plan.notes)
    alone = make_plan(labels_corpus(), PlanSettings(seed=3, enroll_utterances=[1]))
    assert not any("two protocols" in note for note in alone.notes)


def test_n1_trials_is_checked_when_the_experiment_loads():
    from vpeval.config import load_experiment_text
    from vpeval.errors import ConfigError

    text = "name: x\ndata:\n  corpus: manifest\n  n1_trials: pooled\nattackers: [ge2e]\nprotocols: [O-O]\n"
    with pytest.raises(ConfigError, match=r"line 4.*n1_trials"):
        load_experiment_text(text, "exp.yaml")


@pytest.mark.parametrize("n", NS)
def test_targets_match_speakers_and_nontargets_are_same_gender(plan, n):
    ev = plan.evaluation
    for t in plan.trial_lists[n].trials:
        speakers = {ev[i].speaker for i in t.test}
        assert speakers == {t.test_speaker} and {ev[i].speaker for i in t.enroll} == {t.enroll_speaker}
        assert (t.enroll_speaker == t.test_speaker) == t.target
        assert t.gender == ev.gender_of(t.enroll_speaker) == ev.gender_of(t.test_speaker)


def test_same_seed_same_plan_other_seed_other_plan_and_listing_order_does_not_matter():
    corpus = labels_corpus()
    a = make_plan(corpus, PlanSettings(seed=3, enroll_utterances=NS))
    shuffled = corpus.utterances[:]
    random.Random(0).shuffle(shuffled)
    b = make_plan(Corpus("labels", shuffled), PlanSettings(seed=3, enroll_utterances=NS))
    c = make_plan(corpus, PlanSettings(seed=4, enroll_utterances=NS))
    assert sorted(a.train.speakers) == sorted(b.train.speakers)
    for n in NS:
        assert _as_rows(a.trial_lists[n]) == _as_rows(b.trial_lists[n])
        assert _as_rows(a.trial_lists[n]) != _as_rows(c.trial_lists[n])


def test_changing_the_list_of_n_changes_nothing_else():
    corpus = labels_corpus()
    full = make_plan(corpus, PlanSettings(seed=1, enroll_utterances=[1, 5, 10, 15]))
    fewer = make_plan(corpus, PlanSettings(seed=1, enroll_utterances=[15, 5]))
    for n in (5, 15):
        assert _as_rows(full.trial_lists[n]) == _as_rows(fewer.trial_lists[n])
    assert full.enroll_ids == fewer.enroll_ids and full.train.speakers == fewer.train.speakers


def test_trial_counts_follow_the_settings():
    settings = PlanSettings(
        seed=0, enroll_utterances=[1, 3], target_trials_per_speaker=4, nontarget_trials_per_speaker=7
    )
    plan = make_plan(labels_corpus(), settings)
    for tl in plan.trial_lists.values():
        assert sum(t.target for t in tl.trials) == 8 * 4 and sum(not t.target for t in tl.trials) == 8 * 7
        assert len({(t.enroll_id, t.test_id) for t in tl.trials}) == len(tl)


def test_pool_too_small_for_n_names_n_and_the_speaker():
    corpus = labels_corpus(utterances=12)
    with pytest.raises(DataError, match=r"N=10, but speaker s\d\d has only 6 utterances in its enrollment pool"):
        make_plan(corpus, PlanSettings(enroll_utterances=[1, 10]))


def test_too_many_train_speakers_and_bad_settings_are_refused():
    with pytest.raises(DataError, match="leaves 1 of the 16 speakers"):
        make_plan(labels_corpus(), PlanSettings(attacker_train_speakers=15))
    for bad in ({"attacker_train_speakers": 1.5}, {"enroll_utterances": [0]}, {"enroll_share": 1.0}, {"wrong": 1}):
        with pytest.raises(ValidationError):
            PlanSettings(**bad)


def test_lonely_gender_falls_back_to_other_genders_with_a_note():
    corpus = labels_corpus(speakers=4, utterances=6, sessions=0)
    plan = make_plan(corpus, PlanSettings(seed=0))  # 1 f and 1 m evaluation speaker
    assert len(plan.notes) == 2 and "no other" in plan.notes[0]
    assert all(t.enroll_speaker != t.test_speaker for t in plan.trial_lists[1].trials if not t.target)
    assert plan.validation is None  # 10 % of 2 speakers rounds to none


def test_trial_and_side_files_round_trip(plan, tmp_path):
    for n in (1, 5):
        tl = plan.trial_lists[n]
        trials = write_trials(tl, tmp_path / f"n{n}" / "trials")
        sides = write_sides(tl, tmp_path / f"n{n}" / "sides")
        first = trials.read_text().splitlines()[0].split()
        assert first == [tl.trials[0].enroll_id, tl.trials[0].test_id, "target" if tl.trials[0].target else "nontarget"]
        assert read_sides(sides)[tl.trials[0].enroll_id] == tl.trials[0].enroll
        assert _as_rows(read_trial_list(trials, sides, plan.evaluation, n)) == _as_rows(tl)


def test_n_equal_to_the_pool_size_gives_distinct_trials_only_and_a_note():
    # Two evaluation speakers of 6 utterances: pools of 3, so N = 3 has one set per side.
    corpus = labels_corpus(speakers=2, utterances=6, sessions=0)
    plan = make_plan(corpus, PlanSettings(seed=0, attacker_train_speakers=0, enroll_utterances=[3]))
    trials = plan.trial_lists[3].trials
    pairs = [(frozenset(t.enroll), frozenset(t.test), t.target) for t in trials]
    assert len(pairs) == len(set(pairs)) == 4  # one target and one non-target per speaker
    assert [
        n for n in plan.notes if n.startswith("N=3")
    ] and "2 target and 2 non-target trials instead of 20 and 20" in plan.notes[-1]


def test_a_pool_a_little_larger_than_n_gives_every_distinct_pair_it_can():
    # Pools of 4 and N = 3: 4 sets a side, 16 distinct target pairs, more than the 10 asked.
    corpus = labels_corpus(speakers=2, utterances=8, sessions=0)
    plan = make_plan(corpus, PlanSettings(seed=0, attacker_train_speakers=0, enroll_utterances=[3]))
    targets = [(frozenset(t.enroll), frozenset(t.test)) for t in plan.trial_lists[3].trials if t.target]
    assert len(targets) == len(set(targets)) == 2 * 10
    nontargets = [(frozenset(t.enroll), frozenset(t.test)) for t in plan.trial_lists[3].trials if not t.target]
    assert len(nontargets) == len(set(nontargets)) == 2 * 10
    assert not [n for n in plan.notes if n.startswith("N=3")]
