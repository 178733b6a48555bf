"""Same seed, same bytes; other seed, other audio; adding speakers leaves existing ones unchanged."""

from pathlib import Path


def _bytes(corpus) -> dict[str, bytes]:
    return {u.id: Path(u.path).read_bytes() for u in corpus}


def test_same_seed_same_bytes_other_seed_differs(tmp_path, make_source):
    first = make_source(tmp_path / "a", preset="tiny", speakers=2, utterances=3, seed=7).load()
    second = make_source(tmp_path / "b", preset="tiny", speakers=2, utterances=3, seed=7).load()
    other = make_source(tmp_path / "c", preset="tiny", speakers=2, utterances=3, seed=8).load()
    assert _bytes(first) == _bytes(second)
    assert first.fingerprint == second.fingerprint != other.fingerprint
    assert all(_bytes(first)[k] != _bytes(other)[k] for k in _bytes(first))
    assert [u.transcript for u in first] == [u.transcript for u in second]


def test_adding_speakers_leaves_existing_speakers_unchanged(tmp_path, make_source):
    small = make_source(tmp_path / "small", preset="tiny", speakers=2, utterances=3, seed=1).load()
    large = make_source(tmp_path / "large", preset="tiny", speakers=4, utterances=3, seed=1).load()
    assert large.speakers[:2] == small.speakers
    large_bytes = _bytes(large)
    for uid, data in _bytes(small).items():
        assert large_bytes[uid] == data
    assert [u.transcript for u in small] == [u.transcript for u in large][:6]


def test_parallel_generation_gives_the_same_corpus(tmp_path, make_source):
    serial = make_source(tmp_path / "serial", preset="tiny", speakers=2, utterances=2, seed=2).load()
    parallel = make_source(tmp_path / "parallel", preset="tiny", speakers=2, utterances=2, seed=2, workers=2).load()
    assert serial.fingerprint == parallel.fingerprint  # workers are not part of the content
    assert _bytes(serial) == _bytes(parallel)


def test_engine_output_does_not_depend_on_what_was_said_before():
    from vpeval_espeak.driver import get_engine

    engine = get_engine()
    outputs = []
    for before in ("pitch 90 110", "pitch 200 240\nformant 1 120 80 120", "pitch 90 110"):
        engine.set_voice(before)
        engine.synthesize("something else first, at another rate", rate=200, pitch=30)
        engine.set_voice("pitch 150 190\nroughness 2")
        outputs.append(engine.synthesize("hello there, how are you", rate=150, pitch=45).tobytes())
    assert outputs[0] == outputs[1] == outputs[2]
