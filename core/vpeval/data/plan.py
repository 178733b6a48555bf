"""Who trains the attacker, who is evaluated, and which trials are scored.

Speakers are split into attacker-train speakers (minus a validation share) and evaluation speakers,
gender-stratified. Each evaluation speaker's utterances are split into an enrollment pool and a trial
pool (by session where the corpus has sessions). Trials for each enrollment size N:

* N = 1 with `n1_trials: voiceprivacy` (the default), VoicePrivacy style: the enrollment side is the
  speaker's whole enrollment pool (the attacker averages it, as the VPC toolkit does; its id is the
  speaker id) and the test side one utterance of the trial pool. Non-targets are same-gender; each
  trial carries the enrollment speaker's gender.
* N > 1, and N = 1 with `n1_trials: n-vs-n`, seed 000 (section IV-A): both sides are sets of N
  utterances, drawn from the enrollment pool and from the trial pool. For each side one random order of
  the pool is drawn once, from a generator keyed by the seed, the speaker and the side's index but not
  by N, and the side for N is its first N items, so U1 within U5 within U10 and changing the list of N
  changes nothing else. A run that mixes the two protocols (N = 1 VoicePrivacy beside N > 1) gets a
  plan note saying so.

Every random choice comes from numpy.default_rng keyed by (seed, purpose, speaker, index): no global
state, and adding a speaker or an N leaves everything else as it was.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.data.fingerprint import file_hash
from vpeval.data.kaldi import numbered_trials
from vpeval.data.textfile import read_table
from vpeval.errors import DataError
from vpeval.keys import keyed_rng

# PlanSettings and EvaluationPlan live in leaf modules (vpeval.api types them); importable from here too.
from vpeval.settings import PlanSettings
from vpeval.types import Corpus, EvaluationPlan, Trial, TrialList, Utterance


def make_plan(corpus: Corpus, settings: PlanSettings) -> EvaluationPlan:
    """Split `corpus` and draw the trials `settings` ask for (deterministic from settings.seed)."""
    if not corpus.utterances:
        raise DataError(f"Corpus {corpus.name} has no utterances; check the corpus source.")
    speakers = sorted(corpus.speakers)
    notes: list[str] = []
    train_speakers, eval_speakers = _split_speakers(corpus, speakers, settings)
    validation_speakers = _validation_speakers(train_speakers, settings)
    by_speaker = corpus.by_speaker()
    pools = {}
    for spk in eval_speakers:
        utts = sorted(by_speaker[spk], key=lambda u: u.id)  # the plan must not depend on listing order
        if len(utts) < 2:
            notes.append(f"speaker {spk} has one utterance, too few to enroll and test; left out of evaluation")
            continue
        pools[spk] = _split_pools(utts, settings, spk)
    if len(pools) < 2:
        raise DataError(
            f"Corpus {corpus.name} leaves {len(pools)} evaluation speaker(s) with two or more utterances after "
            f"{len(train_speakers)} attacker-train speakers; lower attacker_train_speakers or add speakers."
        )
    genders = {spk: corpus.gender_of(spk) for spk in pools}
    impostors = _impostors(genders, settings.same_gender_nontargets, notes)
    trial_lists = {}
    if settings.n1_trials == "voiceprivacy" and 1 in settings.enroll_utterances and max(settings.enroll_utterances) > 1:
        notes.append(
            "N=1 trials are VoicePrivacy's (a speaker's whole enrollment pool against one utterance) and N>1 trials "
            "are N utterances against N: two protocols, so a curve over N mixes them; set data.n1_trials: n-vs-n "
            "for one protocol"
        )
    for n in settings.enroll_utterances:
        if n == 1 and settings.n1_trials == "voiceprivacy":
            trials = _single_trials(pools, genders, impostors, settings)
        else:
            _check_pool_sizes(pools, n, settings)
            trials = _multi_trials(pools, genders, impostors, settings, n, notes)
        trial_lists[n] = TrialList(n=n, trials=trials, name=f"n{n}")
    enroll_ids = [u.id for spk in pools for u in pools[spk][0]]
    test_ids = [u.id for spk in pools for u in pools[spk][1]]
    in_eval = set(enroll_ids) | set(test_ids)
    fit = [s for s in train_speakers if s not in validation_speakers]
    return EvaluationPlan(
        train=corpus.with_speakers(fit, name=f"{corpus.name}-train"),
        validation=corpus.with_speakers(validation_speakers, name=f"{corpus.name}-validation")
        if validation_speakers
        else None,
        evaluation=corpus.subset(
            [u.id for u in corpus.utterances if u.id in in_eval], name=f"{corpus.name}-evaluation"
        ),
        enroll_ids=enroll_ids,
        test_ids=test_ids,
        trial_lists=trial_lists,
        settings=settings,
        notes=notes,
    )


# -- speakers ----------------------------------------------------------------------------------


def _split_speakers(corpus: Corpus, speakers: list[str], settings: PlanSettings) -> tuple[list[str], list[str]]:
    total = len(speakers)
    share = settings.attacker_train_speakers
    count = share if isinstance(share, int) else max(1, round(share * total))
    if count > total - 2:
        raise DataError(
            f"attacker_train_speakers ({share}) leaves {total - count} of the {total} speakers of corpus "
            f"{corpus.name} for evaluation; at least 2 are needed, so lower it."
        )
    groups: dict[str, list[str]] = {}
    for spk in speakers:
        key = (corpus.gender_of(spk) or "?") if settings.gender_balanced_split else "all"
        groups.setdefault(key, []).append(spk)
    # Largest remainder: each gender gives the same share of its speakers to training.
    exact = {g: count * len(members) / total for g, members in groups.items()}
    quota = {g: int(np.floor(x)) for g, x in exact.items()}
    for g in sorted(groups, key=lambda g: (quota[g] - exact[g], g))[: count - sum(quota.values())]:
        quota[g] += 1
    train: list[str] = []
    for g, members in sorted(groups.items()):
        order = keyed_rng(settings.seed, "split", g).permutation(len(members))
        train += [members[i] for i in order[: quota[g]]]
    train_set = set(train)
    return sorted(train), [s for s in speakers if s not in train_set]


def _validation_speakers(train: list[str], settings: PlanSettings) -> list[str]:
    count = round(settings.validation_speakers * len(train))
    if count == 0 or count >= len(train):
        return []
    order = keyed_rng(settings.seed, "validation").permutation(len(train))
    return sorted(train[i] for i in order[:count])


def _impostors(genders: dict[str, str | None], same_gender: bool, notes: list[str]) -> dict[str, list[str]]:
    """Speakers whose trial utterances serve as non-targets for each enrollment speaker."""
    by_gender: dict[str | None, list[str]] = {}
    for spk, g in genders.items():
        by_gender.setdefault(g, []).append(spk)
    out = {}
    for spk, g in genders.items():
        # The others of one gender, in `genders` order; all others only where those are used.
        same = [o for o in by_gender[g] if o != spk]
        if same_gender and g is not None and not same:
            notes.append(f"speaker {spk} has no other {g} evaluation speaker; its non-targets use other genders")
        out[spk] = same if same_gender and same else [o for o in genders if o != spk]
    unlabelled = by_gender.get(None, [])
    if same_gender and unlabelled and len(by_gender) > 1:  # the unlabelled become a "gender" of their own
        source = {1: "every other speaker (it is the only one)", 2: "the other one alone"}.get(
            len(unlabelled), f"the other {len(unlabelled) - 1} unlabelled ones only"
        )
        notes.append(
            f"{len(unlabelled)} evaluation speaker(s) have no gender label ({', '.join(unlabelled[:3])}"
            f"{', ...' if len(unlabelled) > 3 else ''}) and form a group of their own: their non-target trials "
            f"come from {source}, and they count in no f/m figure; give them a gender in spk2gender"
        )
    return out


# -- pools -------------------------------------------------------------------------------------


def _split_pools(utts: list[Utterance], settings: PlanSettings, spk: str) -> tuple[list[Utterance], list[Utterance]]:
    """(enrollment pool, trial pool) of one speaker, disjoint, each in id order.

    With two or more sessions whole sessions go to one pool, so enrollment and trials come from
    different sessions (VoicePrivacy and seed 000 use a different call for the trial side).
    """
    rng = keyed_rng(settings.seed, "pools", spk)
    sessions = [u.session for u in utts]
    if all(s is not None for s in sessions) and len(set(sessions)) >= 2:
        names = sorted(set(sessions))
        names = [names[i] for i in rng.permutation(len(names))]
        want = settings.enroll_share * len(utts)
        enroll_sessions: set[str] = set()
        size = 0
        for name in names[:-1]:  # the last session always stays on the trial side
            n = sessions.count(name)
            if size and abs(size + n - want) > abs(size - want):
                break
            enroll_sessions.add(name)
            size += n
        chosen = {i for i, u in enumerate(utts) if u.session in enroll_sessions}
    else:
        size = min(len(utts) - 1, max(1, round(settings.enroll_share * len(utts))))
        chosen = set(rng.permutation(len(utts))[:size].tolist())
    return [u for i, u in enumerate(utts) if i in chosen], [u for i, u in enumerate(utts) if i not in chosen]


# Draws tried per asked target trial before a speaker is taken to have no more distinct pairs.
_DRAWS_PER_TRIAL = 20


def _check_pool_sizes(
    pools: dict[str, tuple[list[Utterance], list[Utterance]]], n: int, settings: PlanSettings
) -> None:
    for side, k in (("enrollment", 0), ("trial", 1)):
        spk = min(pools, key=lambda s: (len(pools[s][k]), s))
        have = len(pools[spk][k])
        if have < n:
            raise DataError(
                f"enroll_utterances asks for N={n}, but speaker {spk} has only {have} utterances in its {side} "
                f"pool (enroll_share {settings.enroll_share}); lower N, change enroll_share or use speakers with "
                f"at least {2 * n} utterances."
            )


# -- trials ------------------------------------------------------------------------------------


def _single_trials(pools, genders, impostors, settings: PlanSettings) -> list[Trial]:
    """VoicePrivacy trials: speaker enrollment pool vs one trial utterance."""
    trials = []
    test_counts = {spk: len(pools[spk][1]) for spk in pools}
    for spk, (enroll, _) in pools.items():
        side = tuple(u.id for u in enroll)
        tests = pools[spk][1]
        order = keyed_rng(settings.seed, "n1-target", spk).permutation(len(tests))
        for i in order[: settings.target_trials_per_speaker]:
            u = tests[i]
            trials.append(Trial(side, (u.id,), True, genders[spk], spk, spk, spk, u.id))
        # Candidate i is utterance i of the impostors' trial pools laid end to end; found by offset rather
        # than by listing them all (a list per speaker of every other speaker's utterances is quadratic).
        others = impostors[spk]
        ends = np.cumsum(np.fromiter(map(test_counts.__getitem__, others), dtype=np.int64, count=len(others)))
        order = keyed_rng(settings.seed, "n1-nontarget", spk).permutation(int(ends[-1]) if len(ends) else 0)
        for i in order[: settings.nontarget_trials_per_speaker]:
            k = int(np.searchsorted(ends, i, side="right"))
            u = pools[others[k]][1][int(i) - (int(ends[k - 1]) if k else 0)]
            trials.append(Trial(side, (u.id,), False, genders[spk], spk, u.speaker, spk, u.id))
    return trials


def _multi_trials(
    pools, genders, impostors, settings: PlanSettings, n: int, notes: list[str] | None = None
) -> list[Trial]:
    """Seed 000 trials: N enrollment-pool utterances vs N trial-pool utterances, nested in N.

    Speaker s has sides E(s, j) and T(s, j); target trials pair E(s, j) with T(s, j), and non-target
    trials pair E(s, j) with T(impostor, k) for distinct (impostor, k) drawn per speaker. Every trial is
    distinct as a pair of utterance sets: a draw that repeats an earlier pair is passed over, and where a
    pool holds fewer distinct pairs than asked (N close to the pool size) the speaker gets fewer trials
    and `notes` says so. Without repeats j runs 0, 1, 2, ..., so side j is the same set at every N.
    """
    sides = max(settings.target_trials_per_speaker, settings.nontarget_trials_per_speaker)

    drawn: dict[tuple[str, int, int], tuple[str, ...]] = {}

    def side(spk: str, pool: int, j: int) -> tuple[str, ...]:
        # Remembered: a test side T(s, k) serves as non-target for many enrollment speakers.
        if (spk, pool, j) not in drawn:
            utts = pools[spk][pool]
            order = keyed_rng(settings.seed, "side", "enroll" if pool == 0 else "test", spk, j).permutation(len(utts))
            drawn[spk, pool, j] = tuple(utts[i].id for i in order[:n])
        return drawn[spk, pool, j]

    def enroll_id(spk: str, j: int) -> str:
        return f"{spk}-n{n}-e{j}"

    def test_id(spk: str, j: int) -> str:
        return f"{spk}-n{n}-t{j}"

    def pair(enroll: tuple[str, ...], test: tuple[str, ...]) -> tuple[frozenset, frozenset]:
        return frozenset(enroll), frozenset(test)

    trials = []
    short: dict[str, tuple[int, int]] = {}
    test_sets = {spk: math.comb(len(pools[spk][1]), n) for spk in pools}  # distinct test sides of each speaker
    for spk in pools:
        want = settings.target_trials_per_speaker
        # Distinct target pairs the pools can give; past that, or after many repeated draws, stop.
        available = math.comb(len(pools[spk][0]), n) * math.comb(len(pools[spk][1]), n)
        seen: set = set()
        j = 0
        while len(seen) < min(want, available) and j < _DRAWS_PER_TRIAL * want:
            enroll, test = side(spk, 0, j), side(spk, 1, j)
            if pair(enroll, test) not in seen:
                seen.add(pair(enroll, test))
                trials.append(Trial(enroll, test, True, genders[spk], spk, spk, enroll_id(spk, j), test_id(spk, j)))
            j += 1
        targets = len(seen)
        want = settings.nontarget_trials_per_speaker
        enough = _at_most(want, math.comb(len(pools[spk][0]), n), (test_sets[o] for o in impostors[spk]))
        seen = set()
        for j, (other, k) in enumerate(_impostor_sides(impostors[spk], sides, settings.seed, spk)):
            if len(seen) == enough:
                break
            # Enrollment side j also serves target trial j (when there is one): fewer sides to represent.
            enroll, test = side(spk, 0, j), side(other, 1, k)
            if pair(enroll, test) not in seen:
                seen.add(pair(enroll, test))
                trials.append(
                    Trial(enroll, test, False, genders[spk], spk, other, enroll_id(spk, j), test_id(other, k))
                )
        if targets < settings.target_trials_per_speaker or len(seen) < want:
            short[spk] = (targets, len(seen))
    if short and notes is not None:
        asked = (settings.target_trials_per_speaker, settings.nontarget_trials_per_speaker)
        got = [sum(t for t, _ in short.values()), sum(m for _, m in short.values())]
        names = ", ".join(sorted(short)[:3]) + (f" and {len(short) - 3} more" if len(short) > 3 else "")
        notes.append(
            f"N={n}: the pools of {len(short)} speaker(s) ({names}) hold too few distinct sets of {n} utterances, so "
            f"they have {got[0]} target and {got[1]} non-target trials instead of {asked[0] * len(short)} and "
            f"{asked[1] * len(short)}; every trial is distinct (lower N or use speakers with more utterances)"
        )
    return trials


def _impostor_sides(impostors: list[str], sides: int, seed: int, spk: str) -> Iterator[tuple[str, int]]:
    """(impostor, test side index) in a random order: first the `sides` sides of each impostor, then,
    only for speakers whose draws repeat, further sides to replace the repeats."""
    # Pair p of the list [(other, k) for other in impostors for k in range(sides)] is (impostors[p // sides],
    # p % sides): computed, not listed (the list holds every impostor's sides, for every speaker).
    for p in keyed_rng(seed, "nontarget", spk).permutation(len(impostors) * sides):
        yield impostors[p // sides], int(p % sides)
    extra = _DRAWS_PER_TRIAL * sides - sides  # sides k = sides ... _DRAWS_PER_TRIAL * sides - 1 of each impostor
    for p in keyed_rng(seed, "nontarget-more", spk).permutation(len(impostors) * extra):
        yield impostors[p // extra], sides + int(p % extra)


def _at_most(want: int, enroll_sets: int, test_sets: Iterator[int]) -> int:
    """min(want, enroll_sets * sum(test_sets)), summing only until the product reaches `want`."""
    total = 0
    for count in test_sets:
        total += count
        if enroll_sets * total >= want:
            return want
    return min(want, enroll_sets * total)


# -- files -------------------------------------------------------------------------------------


def write_trials(trial_list: TrialList, path: str | os.PathLike) -> Path:
    """Kaldi trials: `enroll-id test-id target|nontarget` per trial."""
    lines = [f"{t.enroll_id} {t.test_id} {'target' if t.target else 'nontarget'}" for t in trial_list.trials]
    return _write(Path(path), lines)


def write_sides(trial_list: TrialList, path: str | os.PathLike) -> Path:
    """`side-id utt-id utt-id ...` for every enroll and test side id (which utterances make each side)."""
    sides: dict[str, tuple[str, ...]] = {}
    for t in trial_list.trials:
        for sid, utts in ((t.enroll_id, t.enroll), (t.test_id, t.test)):
            if sides.setdefault(sid, utts) != utts:
                raise ValueError(f"side id {sid} stands for two different utterance sets")
    return _write(Path(path), [f"{sid} {' '.join(utts)}" for sid, utts in sorted(sides.items())])


def read_sides(path: str | os.PathLike) -> dict[str, tuple[str, ...]]:
    """side id -> its utterance ids, from a sides file (write_sides); a side or an utterance in a side twice is
    refused."""
    path = Path(path)
    sides = {}
    for line, (sid, *utts) in read_table(path, ("side-id", "utt-id"), last="many"):
        if len(set(utts)) != len(utts):
            twice = next(u for u in utts if utts.count(u) > 1)
            raise DataError(f"{path} line {line} lists the utterance {twice} twice in side {sid}; list it once.")
        sides[sid] = tuple(utts)
    return sides


def read_trial_list(trials_path: str | os.PathLike, sides_path: str | os.PathLike, corpus: Corpus, n: int) -> TrialList:
    """The TrialList written by write_trials and write_sides, with speakers and genders from `corpus`."""
    sides = read_sides(sides_path)
    trials = []
    seen: dict[tuple[str, str], int] = {}
    mislabelled: list[str] = []
    for line, enroll_id, test_id, target in numbered_trials(trials_path):
        where = f"{trials_path} line {line}"
        if (enroll_id, test_id) in seen:
            raise DataError(
                f"{where} repeats the trial '{enroll_id} {test_id}' of line {seen[enroll_id, test_id]}; "
                "a trial counted twice weighs double in every metric, so remove the repeat."
            )
        seen[enroll_id, test_id] = line
        for sid in (enroll_id, test_id):
            if sid not in sides:
                raise DataError(f"{where} names the side {sid}, which {sides_path} does not list.")
        enroll, test = sides[enroll_id], sides[test_id]
        for uid in enroll + test:
            if uid not in corpus:
                raise DataError(f"{sides_path} names the utterance {uid}, which corpus {corpus.name} does not have.")
        for side, sid in ((enroll, enroll_id), (test, test_id)):
            if len({corpus[u].speaker for u in side}) > 1:
                raise DataError(
                    f"{sides_path} side {sid} holds utterances of more than one speaker; a side is one speaker's."
                )
        spk, tspk = corpus[enroll[0]].speaker, corpus[test[0]].speaker
        if target != (spk == tspk):
            label = "target" if target else "nontarget"
            mislabelled.append(
                f"{where} labels '{enroll_id} {test_id}' {label}, but corpus {corpus.name} gives the sides "
                f"{'the speakers ' + spk + ' and ' + tspk if spk != tspk else 'one speaker, ' + spk}"
            )
        trials.append(Trial(enroll, test, target, corpus.gender_of(spk), spk, tspk, enroll_id, test_id))
    if mislabelled:
        more = f" ({len(mislabelled)} trials are mislabelled; this is the first)" if len(mislabelled) > 1 else ""
        raise DataError(f"{mislabelled[0]}{more}; correct the labels or the corpus's speakers.")
    return TrialList(n=n, trials=trials, name=f"n{n}")


def _write(path: Path, lines: Sequence[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)
    return path


# -- predefined (VoicePrivacy) trials ---------------------------------------------------------


@dataclass
class TrialFolder:
    """One `<set>_trials_f|m` folder: its trials file and its utterances.

    `renamed` maps ids as written in the folder's files to corpus ids, where loading several folders
    had to prefix colliding ids.
    """

    name: str
    trials_file: Path
    corpus: Corpus
    renamed: dict[str, str] = field(default_factory=dict)


@dataclass
class PredefinedSet:
    """One VoicePrivacy evaluation set: an enrollment folder and its trial folders."""

    enrolls: Corpus
    trials: list[TrialFolder]
    # Listed in the folders but skipped as bad audio: utterance ids, and enrollment speakers left with none.
    dropped: set[str] = field(default_factory=set)
    dropped_speakers: set[str] = field(default_factory=set)
    name: str = ""  # the set's name in results (libri_dev); default: the enrolls folder without "_enrolls"

    @property
    def subset(self) -> str:
        return self.name or self.enrolls.name.removesuffix("_enrolls")


def predefined_plan(
    sets: Sequence[PredefinedSet],
    train: Corpus | None,
    settings: PlanSettings,
    name: str = "kaldi",
    utility: Sequence[Corpus] = (),
) -> EvaluationPlan:
    """An EvaluationPlan from VoicePrivacy trial files (N = 1 only).

    The enrollment side of `enroll-spk` is all of that speaker's utterances in the set's enrolls
    folder; the trial gender comes from the folder's _f/_m suffix, else from spk2gender.
    """
    bigger = [n for n in settings.enroll_utterances if n != 1]
    if settings.n1_trials != "voiceprivacy":
        raise DataError(
            "data.n1_trials is n-vs-n, but the kaldi corpus's `evaluation` trial files are VoicePrivacy's (an "
            "enrollment pool against one utterance); remove n1_trials or drop `evaluation` so vpeval draws trials."
        )
    if bigger:
        raise DataError(
            f"enroll_utterances asks for N={bigger[0]}, but the kaldi corpus's `evaluation` trial files are "
            "single-utterance (VoicePrivacy); use enroll_utterances [1] or drop `evaluation` so vpeval draws trials."
        )
    trials: list[Trial] = []
    enroll_ids: list[str] = []
    test_ids: list[str] = []
    utterances: dict[str, Utterance] = {}
    genders: dict[str, str] = {}
    notes: list[str] = []
    for s in sets:
        enroll_by_speaker = s.enrolls.by_speaker()
        # One tuple per enrollment speaker, shared by all of its trials (not one per trial line).
        enroll_sides = {spk: tuple(u.id for u in utts) for spk, utts in enroll_by_speaker.items()}
        prefix = f"{s.enrolls.name}-" if len(sets) > 1 else ""
        enroll_ids += [u.id for u in s.enrolls.utterances]
        utterances.update((u.id, u) for u in s.enrolls.utterances)
        genders.update(s.enrolls.speaker_gender)
        seen_trials: dict[tuple[str, str], str] = {}
        contradicted: dict[str, set[str]] = {}  # trial folder -> enrollment speakers whose gender it contradicts
        for folder in s.trials:
            _refuse_shared_files(s.enrolls, folder.corpus)
            test_ids += [u.id for u in folder.corpus.utterances]
            utterances.update((u.id, u) for u in folder.corpus.utterances)
            genders.update(folder.corpus.speaker_gender)
            folder_gender = {"_f": "f", "_m": "m"}.get(folder.name[-2:])
            for line, spk, utt, target in numbered_trials(folder.trials_file):
                uid = folder.renamed.get(utt, utt)
                where = f"{folder.trials_file} line {line}"
                if (spk, uid) in seen_trials:
                    raise DataError(
                        f"{where} repeats the trial '{spk} {utt}' of {seen_trials[spk, uid]}; a trial counted twice "
                        "weighs double in every metric, so remove the repeat."
                    )
                seen_trials[spk, uid] = where
                if uid in s.dropped or (spk not in enroll_by_speaker and spk in s.dropped_speakers):
                    notes.append(f"{folder.name} line {line} dropped: its audio was skipped as bad")
                    continue
                if spk not in enroll_by_speaker:
                    raise DataError(
                        f"{folder.trials_file} line {line} enrolls speaker {spk}, "
                        f"who has no utterance in {s.enrolls.name}."
                    )
                if uid not in folder.corpus:
                    raise DataError(
                        f"{folder.trials_file} line {line} tests utterance {utt}, "
                        f"which {folder.name}/wav.scp does not list."
                    )
                side = enroll_sides[spk]
                gender = folder_gender or s.enrolls.gender_of(spk)
                if folder_gender and s.enrolls.gender_of(spk) not in (None, folder_gender):
                    contradicted.setdefault(folder.name, set()).add(spk)
                test_speaker = folder.corpus[uid].speaker
                if target != (test_speaker == spk):
                    raise DataError(
                        f"{where} labels '{spk} {utt}' {'target' if target else 'nontarget'}, but "
                        f"{folder.name}/utt2spk gives {utt} the speaker {test_speaker}; correct the label or utt2spk."
                    )
                subset = s.subset if len(sets) > 1 else ""  # one set: no dataset coordinate (results as before)
                trials.append(Trial(side, (uid,), target, gender, spk, test_speaker, prefix + spk, uid, subset))
        for name, speakers in contradicted.items():
            first = sorted(speakers)[0]
            notes.append(
                f"{name} enrolls {len(speakers)} speaker(s) ({first} first) whose gender in "
                f"{s.enrolls.name}/spk2gender is not its suffix's {name[-1]}; their trials count as {name[-1]} "
                "(the folder's suffix), so check the folder name or spk2gender"
            )
    overlap = set(enroll_ids) & set(test_ids)
    if overlap:
        raise DataError(
            f"utterance {sorted(overlap)[0]} is both an enrollment and a trial utterance; "
            "the evaluation folders must not share utterances."
        )
    eval_speakers = {u.speaker for u in utterances.values()}
    train = train or Corpus(f"{name}-train", [])
    shared = sorted(eval_speakers & set(train.speakers))
    if shared:
        raise DataError(
            f"speaker {shared[0]} is in the attacker-train folder {train.name} and in the evaluation folders; "
            "attacker training must not see evaluation speakers."
        )
    validation = _validation_speakers(sorted(train.speakers), settings)
    # Utility-only sets (VoicePrivacy's IEMOCAP_dev/test): anonymized and heard by the speech metrics (WER,
    # UAR), in no trial.
    for extra in utility:
        utterances.update((u.id, u) for u in extra.utterances if u.id not in utterances)
        genders.update(extra.speaker_gender)
    speech_ids = [u.id for extra in utility for u in extra.utterances]
    evaluation = Corpus(
        f"{name}-evaluation", [utterances[i] for i in dict.fromkeys(enroll_ids + test_ids + speech_ids)], dict(genders)
    )
    return EvaluationPlan(
        train=train.with_speakers([s for s in train.speakers if s not in validation], name=f"{name}-train"),
        validation=train.with_speakers(validation, name=f"{name}-validation") if validation else None,
        evaluation=evaluation,
        enroll_ids=list(dict.fromkeys(enroll_ids)),
        test_ids=list(dict.fromkeys(test_ids)),
        trial_lists={1: TrialList(n=1, trials=trials, name="n1")},
        settings=settings,
        notes=notes,
    )


def _refuse_shared_files(enrolls: Corpus, trials: Corpus) -> None:
    """An utterance tested against an enrollment that holds it would be scored against itself.

    Ids cannot tell (an id in two folders gets each folder's name as prefix), so compare the files: the
    same path, the same file under two names (a hard link), or the same bytes (a copy: hashed, with the
    fingerprint's hash, only where a trial file has the size of an enrollment file).
    """
    enrolled: dict[tuple, Utterance] = {}
    by_size: dict[int, list[Utterance]] = {}
    for u in enrolls.utterances:
        enrolled[("path", os.path.realpath(u.path))] = u
        if (st := _stat(u.path)) is not None:
            enrolled[("inode", st.st_dev, st.st_ino)] = u
            by_size.setdefault(st.st_size, []).append(u)
    hashed: set[int] = set()
    for u in trials.utterances:
        st = _stat(u.path)
        keys = [("path", os.path.realpath(u.path))] + ([("inode", st.st_dev, st.st_ino)] if st else [])
        if st is not None and st.st_size in by_size:
            if st.st_size not in hashed:  # hash an enrollment file only when a trial file has its size
                hashed.add(st.st_size)
                enrolled.update((("bytes", file_hash(e.path)), e) for e in by_size[st.st_size])
            keys.append(("bytes", file_hash(u.path)))
        twin = next((enrolled[k] for k in keys if k in enrolled), None)
        if twin is not None:
            where = trials.info.get("origin", {}).get(u.id, f"trial folder {trials.name}")
            there = enrolls.info.get("origin", {}).get(twin.id, f"enrollment folder {enrolls.name}")
            same = (
                "" if os.path.realpath(u.path) == os.path.realpath(twin.path) else f" (the same audio as {twin.path})"
            )
            raise DataError(
                f"{where} lists {u.path}{same}, which {there} lists for enrollment; an utterance cannot be tested "
                "against an enrollment that holds it, so remove it from one of the folders."
            )


def _stat(path: str) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # the scan names a missing file
    return st if stat.S_ISREG(st.st_mode) else None


def plan_summary(plan: EvaluationPlan) -> dict[str, Any]:
    """Counts for the run report."""
    return {
        "train_speakers": len(plan.train.speakers),
        "validation_speakers": len(plan.validation.speakers) if plan.validation else 0,
        "evaluation_speakers": len(plan.evaluation.speakers),
        "enroll_utterances": len(plan.enroll_ids),
        "trial_utterances": len(plan.test_ids),
        "trials": {
            n: {"target": sum(t.target for t in tl.trials), "nontarget": sum(not t.target for t in tl.trials)}
            for n, tl in plan.trial_lists.items()
        },
        "notes": list(plan.notes),
    }
