import jiwer
import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval.testing.dummies import make_corpus
from vpeval_speech.wer import WER


@pytest.fixture
def corpora(tmp_path):
    original = make_corpus(tmp_path / "orig", speakers=2, utterances=3, seconds=0.3, seed=1, name="orig")
    anonymized = make_corpus(tmp_path / "anon", speakers=2, utterances=3, seconds=0.3, seed=2, name="anon")
    return original, anonymized


def scripted(corpus, texts, key_of_audio):
    return {key_of_audio(u.load(16000)): text for u, text in zip(corpus, texts, strict=True)}


def test_identical_text_gives_zero_and_edits_match_jiwer(tmp_path, corpora, scripted_asr, make_context, key_of_audio):
    original, anonymized = corpora
    references = [u.transcript for u in original]
    # Anonymized hypotheses: one substitution, one deletion, one insertion, punctuation/case that must not count.
    edited = list(references)
    words = edited[0].split()
    edited[0] = " ".join(["purple"] + words[1:])
    edited[1] = " ".join(edited[1].split()[:-1])
    edited[2] = edited[2] + " again"
    edited[3] = edited[3].upper() + "."
    texts = {**scripted(original, references, key_of_audio), **scripted(anonymized, edited, key_of_audio)}
    metric = WER(context=make_context(tmp_path, scripted_asr(texts)))

    results = metric.compute(MetricInputs(original=original, anonymized=anonymized))

    by_speech = {r.details["speech"]: r for r in results if r.gender == "all"}
    assert by_speech["original"].value == 0.0
    total_words = sum(len(r.split()) for r in references)
    assert by_speech["anonymized"].value == pytest.approx(100.0 * 3 / total_words)
    assert by_speech["anonymized"].value == pytest.approx(
        100.0 * jiwer.wer(references, [e.lower().rstrip(".") for e in edited])
    )
    details = by_speech["anonymized"].details
    assert (details["substitutions"], details["deletions"], details["insertions"]) == (1, 1, 1)
    assert details["reference_words"] == total_words and details["utterances"] == len(original)
    assert details["asr"] == "scripted" and by_speech["anonymized"].unit == "%"


def test_original_only_skips_untranscribed_and_caches(tmp_path, corpora, scripted_asr, make_context, key_of_audio):
    original, _ = corpora
    original = type(original)("orig", [u.replace(transcript=None) if i == 0 else u for i, u in enumerate(original)])
    hypotheses = ["seven river"] * len(original)  # every reference has four words
    asr = scripted_asr(scripted(original, hypotheses, key_of_audio))
    metric = WER(context=make_context(tmp_path, asr))

    first = metric.compute(MetricInputs(original=original))
    assert [r.details["speech"] for r in first] == ["original"] * 3
    assert [r.gender for r in first] == ["all", "f", "m"]
    assert first[0].details["skipped_no_transcript"] == 1
    assert first[0].details["utterances"] == len(original) - 1
    expected = jiwer.wer([u.transcript for u in original][1:], hypotheses[1:])
    assert first[0].value == pytest.approx(100 * expected)
    assert asr.calls == len(original) - 1

    second = metric.compute(MetricInputs(original=original))
    assert second[0].value == first[0].value
    assert asr.calls == len(original) - 1  # served from the transcript cache
    hyp_file = (tmp_path / "work" / "hyp_original.txt").read_text().splitlines()
    assert len(hyp_file) == len(original) - 1 and hyp_file[0].endswith("seven river")


def test_no_transcripts_is_a_clear_error(tmp_path, corpora, scripted_asr, make_context):
    original, _ = corpora
    bare = type(original)("bare", [u.replace(transcript=None) for u in original])
    metric = WER(context=make_context(tmp_path, scripted_asr({})))
    with pytest.raises(MetricInputError, match="bare has a transcript"):
        metric.compute(MetricInputs(original=bare))


def test_random_texts_against_jiwer(tmp_path, corpora, scripted_asr, make_context, key_of_audio):
    original, _ = corpora
    rng = np.random.default_rng(0)
    vocabulary = ["red", "green", "blue", "seven", "river", "paper", "sky"]
    hypotheses = [" ".join(rng.choice(vocabulary, rng.integers(0, 7))) for _ in original]
    metric = WER(context=make_context(tmp_path, scripted_asr(scripted(original, hypotheses, key_of_audio))))
    result = metric.compute(MetricInputs(original=original))[0]
    assert result.value == pytest.approx(100 * jiwer.wer([u.transcript for u in original], hypotheses))


def test_per_gender_rows_match_jiwer_and_intervals_follow_speaker_spread(
    tmp_path, scripted_asr, make_context, key_of_audio
):
    original = make_corpus(tmp_path / "many", speakers=8, utterances=3, seconds=0.3, seed=4, name="many")
    rng = np.random.default_rng(0)
    hypotheses = []
    for u in original:  # speakers differ: each drops a speaker-dependent share of words
        words = u.transcript.split()
        keep = rng.random(len(words)) > 0.1 * (int(u.speaker[-1]) % 4)
        hypotheses.append(" ".join(w for w, k in zip(words, keep, strict=True) if k))
    metric = WER(
        WER.Params(bootstrap=500),
        context=make_context(tmp_path, scripted_asr(scripted(original, hypotheses, key_of_audio))),
    )
    results = {r.gender: r for r in metric.compute(MetricInputs(original=original))}
    assert set(results) == {"all", "f", "m"}
    for gender, result in results.items():
        rows = [i for i, u in enumerate(original) if gender == "all" or u.gender == gender]
        reference = jiwer.wer(
            [original.utterances[i].transcript.lower() for i in rows], [hypotheses[i].lower() for i in rows]
        )
        assert result.value == pytest.approx(100 * reference)
        assert result.ci_low <= result.value <= result.ci_high and result.ci_high > result.ci_low
    # With no errors anywhere every replicate is 0: a zero-width interval.
    exact = WER(
        context=make_context(
            tmp_path / "exact", scripted_asr(scripted(original, [u.transcript for u in original], key_of_audio))
        )
    )
    (pooled,) = [r for r in exact.compute(MetricInputs(original=original)) if r.gender == "all"]
    assert pooled.ci_low == pooled.ci_high == pooled.value == 0.0
