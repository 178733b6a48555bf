"""WER/CER as the VoicePrivacy 2026 toolkit scores Track 2 (normaliser vpc2026, per-set rows in the set's language).

The expected numbers come from the toolkit's own scoring, re-expressed below from its
evaluation/utility/asr/whisper_asr/inference.py (e6810a4: _normalize_transcript, plain_text_key,
_extract_chinese_chars) and scored with SpeechBrain's ErrorRateStats, which the toolkit calls.
"""

import re

import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus
from vpeval_speech import vpc_text
from vpeval_speech.wer import WER


def toolkit_tokens(texts: list[str]) -> list[list[str]]:
    """The toolkit's plain_text_key, step by step as it is written there."""
    punct = re.compile(r'[.,!?;:»«""()\[\]…—–\-]')
    out = []
    for text in texts:
        chars = re.compile(r"[\u4e00-\u9fff]+").findall(text.strip())
        cleaned = "".join(chars) if chars else text.strip()
        if re.search(r"[\u4e00-\u9fff]", cleaned):
            cleaned = cleaned.replace(" ", "")
            out.append(list(cleaned) if cleaned else [])
        else:
            cleaned = " ".join(punct.sub("", cleaned.strip().lower()).split())
            out.append(cleaned.split(" ") if cleaned else [])
    return out


def toolkit_wer(references: list[str], hypotheses: list[str]) -> float:
    from speechbrain.utils.metric_stats import ErrorRateStats

    stats = ErrorRateStats()
    ids = [str(i) for i in range(len(references))]
    stats.append(ids=ids, predict=toolkit_tokens(hypotheses), target=toolkit_tokens(references))
    return stats.summarize("error_rate")


CASES = [
    ("Hello, World!", "hello world"),
    ("« Bonjour » — l'ami…", "bonjour l'ami"),
    ("Don't STOP; (now) [here]", "don't stop now here"),
    ("深 shen1 交 jiao1 所 suo3", "深交所"),
    ("今天 天气 很好。", "今天天气很好"),
    ("   ", ""),
    ('He said "yes"', "he said yes"),
    ("a-b–c—d", "abcd"),
]


@pytest.mark.parametrize(("text", "words"), CASES)
def test_tokens_follow_the_toolkit(text, words):
    expected = toolkit_tokens([text])[0]
    assert vpc_text.tokens(text) == expected
    assert "".join(expected) == words.replace(" ", "")


def test_random_texts_error_rate_equals_the_toolkit():
    rng = np.random.default_rng(5)
    pieces = ["Hello", "world", ",", ".", "ÄPFEL", "«", "»", "深", "交", "所", " ", "—", "l'été", "-", "?", "JVS"]
    refs, hyps = [], []
    for _ in range(60):
        refs.append(" ".join(rng.choice(pieces, size=rng.integers(0, 7))))
        hyps.append(" ".join(rng.choice(pieces, size=rng.integers(0, 7))))
    counted = [vpc_text.errors(r, h) for r, h in zip(refs, hyps)]
    ours = 100.0 * sum(e for e, _ in counted) / sum(w for _, w in counted)
    assert ours == pytest.approx(toolkit_wer(refs, hyps), abs=1e-9)


def test_set_language_as_the_toolkit_reads_paths():
    assert [vpc_text.set_language(n) for n in ("en_dev", "de_test_ssl", "cn_dev", "ja_test", "emodata_track2_dev")] == [
        "en",
        "de",
        "zh",
        "ja",
        None,
    ]


def kaldi_set(folder, corpus: Corpus, ids: list[str], texts: dict[str, str]):
    folder.mkdir(parents=True)
    (folder / "text").write_text("".join(f"{uid} {texts[uid]}\n" for uid in ids))
    return folder


def test_per_set_rows_in_each_set_language_equal_the_toolkit(tmp_path, scripted_asr, key_of_audio):
    original = make_corpus(tmp_path / "orig", speakers=2, utterances=4, seconds=0.3, seed=1, name="orig")
    anonymized = make_corpus(tmp_path / "anon", speakers=2, utterances=4, seconds=0.3, seed=2, name="anon")
    ids = [u.id for u in original]
    # Chinese references on the cn_dev half, German on the de_dev half (texts as the toolkit's data holds them).
    chinese = ["深交所今天开门", "天气很好", "我们 去 北京", "你好"]
    german = ["Guten Morgen, Welt!", "Das ist gut.", "Ja (oder nein)", "Äpfel und Birnen"]
    refs = dict(zip(ids, chinese + german))
    original = Corpus("orig", [u.replace(transcript=refs[u.id]) for u in original])
    anonymized = Corpus("anon", [u.replace(transcript=refs[u.id]) for u in anonymized])
    hyp_orig = ["深交所今天开门。", "天气很好", "我们去北京", "你好吗"]
    hyp_anon = ["深交所", "天汽很好", "我去南京", ""]
    hyp_orig += ["guten morgen welt", "das ist gut", "ja oder nein", "äpfel und birnen"]
    hyp_anon += ["Guten Abend Welt", "das gut", "ja oder nein nein", "Apfel und Birnen"]
    texts = {key_of_audio(u.load(16000)): t for u, t in zip(original, hyp_orig)}
    texts |= {key_of_audio(u.load(16000)): t for u, t in zip(anonymized, hyp_anon)}
    cn = kaldi_set(tmp_path / "data" / "cn_dev", original, ids[:4], refs)
    de = kaldi_set(tmp_path / "data" / "de_dev", original, ids[4:], refs)

    languages = []

    def factory(kind, name, params):
        languages.append(params.get("language"))
        return scripted_asr(texts)

    from vpeval.api import PluginContext

    context = PluginContext(seed=3, work_dir=tmp_path / "work", plugin_factory=factory)
    metric = WER(
        params=WER.Params(normaliser="vpc2026", sets=[str(cn), str(de)], bootstrap=0),
        context=context,
    )
    results = metric.compute(MetricInputs(original=original, anonymized=anonymized))

    assert {"zh", "de"} <= set(languages)
    per_set = {(r.details["speech"], r.details["dataset"]): r.value for r in results if "dataset" in r.details}
    for speech, hyps in (("original", hyp_orig), ("anonymized", hyp_anon)):
        assert per_set[speech, "cn_dev"] == pytest.approx(toolkit_wer(chinese, hyps[:4]), abs=1e-9)
        assert per_set[speech, "de_dev"] == pytest.approx(toolkit_wer(german, hyps[4:]), abs=1e-9)
    pooled = {r.details["speech"]: r.value for r in results if r.gender == "all" and "dataset" not in r.details}
    assert pooled["anonymized"] == pytest.approx(toolkit_wer(chinese + german, hyp_anon), abs=1e-9)
    assert len(list((tmp_path / "work").rglob("hyp_anonymized_cn_dev.txt"))) == 1


def test_a_set_without_text_is_one_sentence(tmp_path, make_context):
    from vpeval.errors import MetricInputError

    original = make_corpus(tmp_path / "orig", speakers=1, utterances=2, seconds=0.2, seed=1, name="orig")
    (tmp_path / "en_dev").mkdir()
    metric = WER(params=WER.Params(sets=[str(tmp_path / "en_dev")]), context=make_context(tmp_path))
    with pytest.raises(MetricInputError, match="has no `text` file"):
        metric.compute(MetricInputs(original=original))
