"""Target choice: only utterances longer than the threshold, deterministic per voice seed, varied across seeds."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from vpeval.errors import DataError
from vpeval.types import Utterance
from vpeval_streamvoiceanon.targets import TargetPool, duration_of


def pool() -> list[Utterance]:
    out = []
    for s in range(6):
        for i, seconds in enumerate([2.0, 3.99, 4.0, 4.01, 7.5, 12.0]):
            out.append(Utterance(f"s{s}-{i}", f"s{s}", f"/nowhere/s{s}-{i}.wav", duration=seconds))
    out.append(Utterance("short-only", "short", "/nowhere/x.wav", duration=3.0))
    return out


def test_only_utterances_longer_than_four_seconds_are_drawn():
    targets = TargetPool.build(pool(), 4.0, "test")
    assert "short" not in targets.speakers and len(targets.speakers) == 6
    drawn = {targets.draw(np.random.default_rng(seed)).id for seed in range(400)}
    assert {d.split("-")[1] for d in drawn} == {"3", "4", "5"}  # 4.01, 7.5, 12 s; never exactly 4 s
    assert len({d.split("-")[0] for d in drawn}) == 6


def test_same_seed_same_target_and_corpus_order_does_not_matter():
    forward = TargetPool.build(pool(), 4.0, "test")
    backward = TargetPool.build(list(reversed(pool())), 4.0, "test")
    for seed in range(50):
        a = forward.draw(np.random.default_rng(seed))
        assert a == forward.draw(np.random.default_rng(seed)) == backward.draw(np.random.default_rng(seed))
    assert len({forward.draw(np.random.default_rng(seed)).id for seed in range(50)}) > 5


def test_utterance_draws_weigh_speakers_by_their_long_utterances():
    utterances = [Utterance(f"a{i}", "a", "/x.wav", duration=5.0) for i in range(9)]
    utterances.append(Utterance("b0", "b", "/x.wav", duration=5.0))
    targets = TargetPool.build(utterances, 4.0, "test")
    by_utterance = [targets.draw(np.random.default_rng(s), by="utterance").speaker for s in range(300)]
    by_speaker = [targets.draw(np.random.default_rng(s)).speaker for s in range(300)]
    assert 0.8 < by_utterance.count("a") / 300 < 0.97 and 0.35 < by_speaker.count("a") / 300 < 0.65


def test_the_source_speaker_is_never_its_own_target():
    targets = TargetPool.build(pool(), 4.0, "test")
    assert all(targets.draw(np.random.default_rng(seed), exclude_speaker="s2").speaker != "s2" for seed in range(200))


def test_a_pool_without_long_utterances_is_refused():
    with pytest.raises(DataError, match="longer than 4 s"):
        TargetPool.build([u for u in pool() if (u.duration or 0) <= 4.0], 4.0, "test")


def test_duration_is_read_from_the_file_when_the_corpus_lacks_it(tmp_path):
    path = tmp_path / "a.wav"
    sf.write(path, np.zeros(16000 * 5, dtype=np.float32), 16000)
    assert duration_of(Utterance("a", "s", str(path))) == pytest.approx(5.0)
