import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval.types import Corpus
from vpeval_speech.emotion_evaluator import class_recalls, speaker_folds
from vpeval_speech.uar import UAR


def test_emotion_encoded_in_prosody_is_recognised_across_speakers(tmp_path, make_emotional_corpus, make_context):
    corpus = make_emotional_corpus(tmp_path / "speech", speakers=6, per_emotion=2)
    # "Anonymized" speech that keeps every emotion the same (neutral style): UAR must fall to chance.
    flat = make_emotional_corpus(tmp_path / "flat", speakers=6, per_emotion=1, seed=5)
    neutral_paths = {u.speaker: u.path for u in flat if u.emotion == "neutral"}
    anonymized = Corpus("anon", [u.replace(path=neutral_paths[u.speaker]) for u in corpus])

    original, flattened = UAR(context=make_context(tmp_path)).compute(
        MetricInputs(original=corpus, anonymized=anonymized)
    )

    assert original.details["speech"] == "original" and flattened.details["speech"] == "anonymized"
    assert original.value > 80.0
    # One constant input per speaker with balanced emotions: whatever it predicts, each fold scores chance.
    assert flattened.value == pytest.approx(25.0)
    assert original.details["folds"] == 5 and original.details["chance"] == 25.0
    assert original.details["table3"]["columns"] == ["UAR", "Sad", "Neutral", "Angry", "Happy"]
    assert original.details["table3"]["row"][0] == original.value
    assert original.details["table3"]["row"][1:] == list(original.details["per_class_recall"].values())
    assert "no packaged emotion model" in original.details["evaluator"]


def test_identical_anonymized_speech_keeps_the_uar_and_random_labels_give_chance(
    tmp_path, make_emotional_corpus, make_context
):
    corpus = make_emotional_corpus(tmp_path / "speech", speakers=4, per_emotion=3)
    both = UAR(context=make_context(tmp_path)).compute(
        MetricInputs(original=corpus, anonymized=Corpus("same", list(corpus)))
    )
    same = both[1]
    assert same.details["speech"] == "anonymized"
    original = UAR(context=make_context(tmp_path)).compute(MetricInputs(original=corpus))
    assert len(original) == 1 and same.value == original[0].value

    rng = np.random.default_rng(1)
    labels = rng.permutation([u.emotion for u in corpus])
    shuffled = Corpus("shuffled", [u.replace(emotion=e) for u, e in zip(corpus, labels, strict=True)])
    chance = UAR(UAR.Params(folds=4), context=make_context(tmp_path)).compute(MetricInputs(original=shuffled))[0]
    assert chance.value < 50.0 < original[0].value


def test_folds_are_speaker_independent_and_uar_matches_a_direct_count():
    speakers = np.repeat([f"s{i}" for i in range(7)], 4)
    folds = speaker_folds(speakers, 5)
    assert len(folds) == 5
    for train, test in folds:
        assert not set(speakers[train]) & set(speakers[test])
    assert len(speaker_folds(speakers[:8], 5)) == 2  # two speakers: two folds

    truth = np.array(["a", "a", "a", "b", "b", "c"])
    predicted = np.array(["a", "b", "a", "b", "a", "c"])
    assert class_recalls(truth, predicted) == {"a": 2 / 3, "b": 1 / 2, "c": 1.0}


def test_label_problems_are_clear_errors(tmp_path, make_emotional_corpus, make_context):
    corpus = make_emotional_corpus(tmp_path / "speech", speakers=2, per_emotion=1)
    one_emotion = Corpus("calm", [u.replace(emotion="neutral") for u in corpus])
    with pytest.raises(MetricInputError, match="at least two emotions in corpus calm"):
        UAR(context=make_context(tmp_path)).compute(MetricInputs(original=one_emotion))
    one_speaker = Corpus("solo", [u.replace(speaker="s0") for u in corpus])
    with pytest.raises(MetricInputError, match="at least two speakers in corpus solo"):
        UAR(context=make_context(tmp_path)).compute(MetricInputs(original=one_speaker))
    unlabelled = Corpus("part", [u.replace(emotion=None) if i % 2 else u for i, u in enumerate(corpus)])
    result = UAR(context=make_context(tmp_path)).compute(MetricInputs(original=unlabelled))[0]
    assert result.details["skipped_no_emotion"] == len(corpus) // 2


def test_weighted_fold_uar_with_unit_weights_is_the_fold_mean_and_reweighting_follows_speakers():
    from vpeval_speech.emotion_evaluator import weighted_fold_uar

    truth = np.array(["a", "a", "b", "b", "a", "b"])
    predicted = np.array(["a", "b", "b", "b", "a", "a"])
    folds = [(np.array([0, 1, 2, 3]), predicted[:4]), (np.array([4, 5]), predicted[4:])]
    direct = np.mean([np.mean(list(class_recalls(truth[r], p).values())) for r, p in folds])
    assert weighted_fold_uar(folds, truth, np.ones(6)) == pytest.approx(direct)
    # Drawing row 1's speaker twice and dropping row 0's weighs its error twice.
    weights = np.array([0, 2, 1, 1, 1, 1], dtype=float)
    assert weighted_fold_uar(folds, truth, weights) == pytest.approx(np.mean([(0 + 1) / 2, (1 + 0) / 2]))
    assert np.isnan(weighted_fold_uar(folds, truth, np.zeros(6)))


def test_uar_interval_brackets_the_value(tmp_path, make_emotional_corpus, make_context):
    corpus = make_emotional_corpus(tmp_path / "speech", speakers=6, per_emotion=2)
    (result,) = UAR(UAR.Params(bootstrap=300), context=make_context(tmp_path)).compute(MetricInputs(original=corpus))
    assert result.ci_low <= result.value <= result.ci_high
    assert result.details["bootstrap"]["unit"] == "speaker"
    (plain,) = UAR(UAR.Params(bootstrap=0), context=make_context(tmp_path)).compute(MetricInputs(original=corpus))
    assert plain.ci_low is None and plain.value == result.value


def test_feature_sets_prosody_functionals_and_both(tmp_path, make_emotional_corpus, make_context):
    corpus = make_emotional_corpus(tmp_path / "speech", speakers=4, per_emotion=2)
    dims = {}
    for kind in ("prosody", "functionals", "both"):
        (result,) = UAR(UAR.Params(features=kind, bootstrap=0), context=make_context(tmp_path / kind)).compute(
            MetricInputs(original=corpus)
        )
        dims[kind] = int(result.details["evaluator"].split(" on ")[1].split()[0])
        assert 0.0 <= result.value <= 100.0
    assert dims == {"prosody": 13, "functionals": 70, "both": 83}


def test_level_normalization_removes_a_gain_change(tmp_path, make_emotional_corpus, make_context):
    import soundfile as sf

    from vpeval_speech.level import normalise_level

    audio = np.random.default_rng(0).normal(scale=0.3, size=16000).astype(np.float32)
    assert np.sqrt(np.mean(normalise_level(audio, "rms") ** 2)) == pytest.approx(0.1, rel=1e-5)
    assert np.max(np.abs(normalise_level(audio, "peak"))) == pytest.approx(0.99, rel=1e-6)
    assert normalise_level(audio, "none") is audio
    assert not normalise_level(np.zeros(10, np.float32), "rms").any()

    corpus = make_emotional_corpus(tmp_path / "speech", speakers=4, per_emotion=2)
    gains = np.random.default_rng(1).uniform(0.02, 0.3, size=len(corpus))
    quiet = []
    for utterance, gain in zip(corpus, gains, strict=True):
        path = tmp_path / "quiet" / f"{utterance.id}.wav"
        path.parent.mkdir(exist_ok=True)
        sf.write(path, utterance.load(16000) * gain, 16000, subtype="FLOAT")
        quiet.append(utterance.replace(path=str(path)))
    inputs = MetricInputs(original=corpus, anonymized=Corpus("quiet", quiet))
    for mode in ("rms", "peak"):
        params = UAR.Params(folds=4, level_normalization=mode, bootstrap=0)
        original, anonymized = UAR(params, context=make_context(tmp_path / mode)).compute(inputs)
        # Each quiet copy is brought back to its original's level: the evaluator reads the same features.
        assert anonymized.value == pytest.approx(original.value, abs=1e-9), mode
        assert original.metric == anonymized.metric == f"uar-{mode}"
        assert f"input {mode}-normalised" in original.details["evaluator"]
