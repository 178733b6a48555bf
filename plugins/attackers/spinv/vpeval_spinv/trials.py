"""Which recovered/target pairs the `inversion` metric scores: an official trial list, or every pair of
different utterances up to a bound, beyond it a seeded sample (seed 002's verification numbers).

All pairs of U utterances are U (U - 1): about 2e10 for VoxCeleb1's 153 k, so beyond `max_pairs` the
metric gets a sample: every same-speaker pair when they fit in half the bound (else a uniform sample of
that many), and different-speaker pairs drawn uniformly to fill the rest. The note says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Utterance

VOXCELEB_LABELS = {"1": True, "0": False}  # VoxCeleb1-O: "1 enroll.wav test.wav"
KALDI_LABELS = {"target": True, "nontarget": False}  # Kaldi / VoicePrivacy: "enroll test target"


def read_pair_list(path: str | Path, utterances: Sequence[Utterance]) -> np.ndarray:
    """(test row, enrollment row) pairs [P, 2] of a trial list over `utterances`: the test side is the one
    recovered (the intercepted speech), the enrollment side the one the target encoder embeds.

    Lines are VoxCeleb1-O's `1|0 enroll test` or Kaldi's `enroll test target|nontarget`; a name matches an
    utterance id, the id without its extension, or the end of its audio path. A label that contradicts the
    corpus' speakers, or a name not in the corpus, is one DataError naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"The spinv trial_list {path} does not exist; give a VoxCeleb1-O or Kaldi trial list file.")
    rows = _name_index(utterances)
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) == 3 and fields[0] in VOXCELEB_LABELS:
            label, enroll, test = VOXCELEB_LABELS[fields[0]], fields[1], fields[2]
        elif len(fields) == 3 and fields[2] in KALDI_LABELS:
            enroll, test, label = fields[0], fields[1], KALDI_LABELS[fields[2]]
        else:
            raise DataError(
                f"{path}:{number}: a trial line is 'label enroll test' (VoxCeleb1-O, label 1 or 0) or 'enroll test "
                "target|nontarget' (Kaldi); fix the line."
            )
        ends = []
        for name in (enroll, test):
            row = rows.get(name, rows.get(_stem(name)))
            if row is None:
                raise DataError(
                    f"{path}:{number}: {name} is not an utterance of the evaluation corpus; give a trial list over "
                    "its utterance ids or audio paths."
                )
            ends.append(row)
        if (utterances[ends[0]].speaker == utterances[ends[1]].speaker) != label:
            raise DataError(
                f"{path}:{number}: the trial is labelled {'target' if label else 'nontarget'} but the corpus gives "
                f"{enroll} and {test} {'other' if label else 'the same'} speakers; fix the list or the corpus."
            )
        pairs.append((ends[1], ends[0]))
    if not pairs:
        raise DataError(f"The spinv trial_list {path} holds no trials; give a trial list file with trial lines.")
    return np.asarray(pairs, dtype=np.int64)


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in Path(name).name else name


def _name_index(utterances: Sequence[Utterance]) -> dict[str, int]:
    """Each utterance's id, id without extension and every trailing part of its path, to its row."""
    index: dict[str, int] = {}
    for row, u in enumerate(utterances):
        parts = Path(u.path).with_suffix("").parts
        for k in range(len(parts)):
            index.setdefault("/".join(parts[k:]), row)
        index[_stem(u.id)] = row
        index[u.id] = row
    return index


def bounded_pairs(speakers: Sequence[str], max_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, str] | None:
    """None when every pair of different rows fits in `max_pairs`; else a seeded sample [P, 2] and its note."""
    speakers = np.asarray(speakers).astype(str)
    count = len(speakers)
    total = count * (count - 1)
    if total <= max_pairs:
        return None
    groups = [np.flatnonzero(speakers == s) for s in np.unique(speakers)]
    sizes = np.array([len(g) * (len(g) - 1) for g in groups], dtype=np.int64)
    n_target = int(sizes.sum())
    keep_target = min(n_target, max_pairs // 2)
    picks = np.sort(rng.choice(n_target, size=keep_target, replace=False)) if keep_target < n_target else None
    targets = _target_pairs(groups, sizes, picks)
    wanted = max_pairs - len(targets)
    draws: list[np.ndarray] = []
    codes = np.zeros(0, dtype=np.int64)
    while len(codes) < wanted:  # rejection: different-speaker pairs are most pairs, so few draws are lost
        flat = rng.integers(0, total, size=2 * (wanted - len(codes)) + 16)
        i, j = flat // (count - 1), flat % (count - 1)
        j = j + (j >= i)  # skip the diagonal
        draws.append((i * count + j)[speakers[i] != speakers[j]])
        every = np.concatenate(draws)
        _, first = np.unique(every, return_index=True)  # each pair once, in the order drawn
        codes = every[np.sort(first)[:wanted]]
    chosen = np.stack([codes // count, codes % count], axis=1)
    non_targets = chosen.astype(np.int64)
    pairs = np.concatenate([targets, non_targets]).astype(np.int64)
    note = (
        f"{len(pairs)} of all {total} pairs, seeded sample ({len(targets)} of {n_target} same-speaker pairs, "
        f"{len(non_targets)} of {total - n_target} others; spinv max_pairs={max_pairs})"
    )
    return pairs, note


def _target_pairs(groups: list[np.ndarray], sizes: np.ndarray, picks: np.ndarray | None) -> np.ndarray:
    """Same-speaker pairs (a != b) of every group, all of them or those at flat positions `picks`."""
    if picks is None:
        out = [np.array([(a, b) for a in g for b in g if a != b], dtype=np.int64).reshape(-1, 2) for g in groups]
        return np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    which = np.searchsorted(starts, picks, side="right") - 1
    rows = []
    for group_index, position in zip(which, picks - starts[which]):
        g = groups[group_index]
        a, b = divmod(int(position), len(g) - 1)
        rows.append((g[a], g[b + (b >= a)]))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)
