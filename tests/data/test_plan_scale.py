"""The plan's non-target draws find candidates by offset instead of listing them (benchmarks/scale.py: the
lists were quadratic in speakers); the trials must be exactly those of the listing definition."""

import pytest

from vpeval.data import plan as plan_module
from vpeval.data.plan import PlanSettings, make_plan
from vpeval.keys import keyed_rng
from vpeval.types import Corpus, Trial, Utterance


def _listed_single_trials(pools, genders, impostors, settings):
    """The N=1 VoicePrivacy draws as first written: every candidate utterance listed, then permuted."""
    trials = []
    for spk, (enroll, _) in pools.items():
        side = tuple(u.id for u in enroll)
        tests = pools[spk][1]
        order = keyed_rng(settings.seed, "n1-target", spk).permutation(len(tests))
        for i in order[: settings.target_trials_per_speaker]:
            trials.append(Trial(side, (tests[i].id,), True, genders[spk], spk, spk, spk, tests[i].id))
        candidates = [u for other in impostors[spk] for u in pools[other][1]]
        order = keyed_rng(settings.seed, "n1-nontarget", spk).permutation(len(candidates))
        for i in order[: settings.nontarget_trials_per_speaker]:
            u = candidates[i]
            trials.append(Trial(side, (u.id,), False, genders[spk], spk, u.speaker, spk, u.id))
    return trials


def _listed_impostor_sides(impostors, sides, seed, spk):
    pairs = [(other, k) for other in impostors for k in range(sides)]
    for p in keyed_rng(seed, "nontarget", spk).permutation(len(pairs)):
        yield pairs[p]
    more = [(other, k) for other in impostors for k in range(sides, plan_module._DRAWS_PER_TRIAL * sides)]
    for p in keyed_rng(seed, "nontarget-more", spk).permutation(len(more)):
        yield more[p]


def _corpus(speakers: int, utterances: int, genders: bool = True, sessions: bool = False) -> Corpus:
    # Pool sizes differ by speaker, so offsets into the impostors' pools are not all multiples of one size.
    return Corpus(
        "c",
        [
            Utterance(
                id=f"s{s:03d}-{u:02d}",
                speaker=f"s{s:03d}",
                path=f"/audio/{s}-{u}.wav",
                gender=("fm"[s % 2] if genders else None),
                session=(f"call{u % 3}" if sessions else None),
            )
            for s in range(speakers)
            for u in range(utterances - s % 3)
        ],
    )


CASES = [
    (_corpus(40, 20), {"enroll_utterances": [1, 5]}),
    (_corpus(24, 12), {"enroll_utterances": [1, 3, 5], "n1_trials": "n-vs-n", "nontarget_trials_per_speaker": 60}),
    # few distinct sets: the draws run into the further sides ("nontarget-more")
    (_corpus(12, 8), {"enroll_utterances": [3], "target_trials_per_speaker": 40, "nontarget_trials_per_speaker": 400}),
    (_corpus(20, 10, sessions=True), {"enroll_utterances": [1, 2], "same_gender_nontargets": False}),
    (_corpus(20, 10, genders=False), {"enroll_utterances": [1, 2], "seed": 7}),
]


@pytest.mark.parametrize("corpus,settings", CASES)
def test_trials_equal_the_listing_definition(corpus, settings, monkeypatch):
    settings = PlanSettings(**settings)
    fast = make_plan(corpus, settings)
    monkeypatch.setattr(plan_module, "_single_trials", _listed_single_trials)
    monkeypatch.setattr(plan_module, "_impostor_sides", _listed_impostor_sides)
    listed = make_plan(corpus, settings)
    assert fast.trial_lists.keys() == listed.trial_lists.keys()
    for n in fast.trial_lists:
        assert fast.trial_lists[n].trials == listed.trial_lists[n].trials
        assert len({(t.enroll, t.test) for t in fast.trial_lists[n].trials}) == len(fast.trial_lists[n].trials)
    assert fast.notes == listed.notes


def test_a_lonely_gender_still_draws_from_every_other_speaker():
    corpus = Corpus(
        "c",
        [
            Utterance(id=f"s{s}-{u}", speaker=f"s{s}", path=f"/a/{s}-{u}.wav", gender="f" if s < 9 else "m")
            for s in range(10)
            for u in range(6)
        ],
    )
    plan = make_plan(corpus, PlanSettings(attacker_train_speakers=2, enroll_utterances=[1]))
    lonely = [t for t in plan.trial_lists[1].trials if t.enroll_speaker == "s9" and not t.target]
    assert lonely and all(t.test_speaker != "s9" for t in lonely)
    assert any("no other m evaluation speaker" in note for note in plan.notes)
