"""Pool voices' frames (poolvc and vector-vc): the first utterances' WORLD envelopes up to max_seconds, their
voice-normalised cepstra and log-F0 statistics, analysed once and read back from disk unchanged."""

import numpy as np

from vpeval_world.matching import envelope_cepstra, mean_normalised
from vpeval_world.pool import UNVOICED_LOGF0, PoolAnalysis, PoolFrameFiles, analyse_voice
from vpeval_world.vocoder import analyse

RATE = 16000
ANALYSIS = PoolAnalysis(frame_period=5.0, n_mels=40, n_ceps=20, max_seconds=1.0)


def tone(f0: float, seconds: float = 0.4) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 15))).astype(np.float32)


TONES = [tone(f0) for f0 in (110.0, 130.0, 150.0, 170.0)]


def read(loaded: list[int]):
    """The tones one by one, noting which were read (the analysis must stop reading at max_seconds)."""
    for i, audio in enumerate(TONES):
        loaded.append(i)
        yield audio


def test_a_voice_is_its_first_utterances_up_to_max_seconds():
    loaded: list[int] = []
    out = analyse_voice(read(loaded), RATE, ANALYSIS)
    assert loaded == [0, 1, 2]  # 0.4 + 0.4 + 0.4 s reach 1.0 s: the fourth is never read
    feats = [analyse(audio, RATE, "dio", 5.0, aperiodicity=False) for audio in TONES[:3]]
    sp = np.concatenate([f.sp for f in feats])
    assert out["log_sp"].dtype == np.float32 and np.array_equal(out["log_sp"], np.log(sp + 1e-12).astype(np.float32))
    cepstra = mean_normalised(np.concatenate([envelope_cepstra(f.sp, RATE, 40, 20) for f in feats]))
    assert out["cepstra"].dtype == np.float32 and np.array_equal(out["cepstra"], cepstra.astype(np.float32))
    f0 = np.concatenate([f.f0 for f in feats])
    voiced = np.log(f0[f0 > 0])
    assert np.array_equal(out["logf0"], [voiced.mean(), voiced.std()])
    assert abs(np.exp(out["logf0"][0]) - 130.0) < 10.0


def test_harvest_is_used_when_asked_for():
    harvest = PoolAnalysis(5.0, 40, 20, 0.1, f0_method="harvest")
    out = analyse_voice(iter(TONES[:1]), RATE, harvest)
    f0 = analyse(TONES[0], RATE, "harvest", 5.0, aperiodicity=False).f0
    assert np.array_equal(out["logf0"], [np.log(f0[f0 > 0]).mean(), np.log(f0[f0 > 0]).std()])


def test_a_voice_without_voiced_frames_gets_the_default_log_f0():
    out = analyse_voice(iter([np.zeros(RATE // 2, dtype=np.float32)]), RATE, ANALYSIS)
    assert np.array_equal(out["logf0"], UNVOICED_LOGF0)


def test_frame_files_analyse_once_and_read_back_what_was_analysed(tmp_path):
    analysed: list[str] = []

    def audios_of(voice: str, rate: int):
        analysed.append(voice)
        return iter(TONES[:2] if voice == "a" else TONES[2:])

    def files():
        return PoolFrameFiles(lambda voice, rate: tmp_path / f"{voice}-{rate}.npz", audios_of, ANALYSIS)

    first = files()
    assert first.missing(["a", "b"], RATE) == ["a", "b"]
    frames = first.frames("a", RATE)
    assert first.frames("a", RATE) is frames and analysed == ["a"]
    assert first.missing(["a", "b"], RATE) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a-{RATE}.npz"]  # no temporary file left behind
    expected = analyse_voice(iter(TONES[:2]), RATE, ANALYSIS)
    again = files().frames("a", RATE)  # another process: reads the file, analyses nothing
    assert analysed == ["a"]
    for got in (frames, again):
        assert np.array_equal(got.log_sp, expected["log_sp"]) and np.array_equal(got.cepstra, expected["cepstra"])
        assert (got.logf0_mean, got.logf0_std) == tuple(expected["logf0"])
