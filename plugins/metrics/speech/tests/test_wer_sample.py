"""WER on a seeded sample of utterances: same ids for original and anonymized, spread over speakers."""

from pathlib import Path

from vpeval.api import ASR, MetricInputs, PluginContext, Transcript
from vpeval.testing.dummies import make_corpus
from vpeval_speech.wer import WER


class EchoASR(ASR):
    """Returns a fixed text and counts calls."""

    name = "echo"
    calls = 0

    def transcribe(self, audio):
        EchoASR.calls += 1
        return Transcript("red green blue seven")


def test_sample_limits_transcriptions_and_is_seeded(tmp_path: Path):
    corpus = make_corpus(tmp_path / "a", speakers=4, utterances=5, seconds=0.2)
    anonymized = corpus.subset([u.id for u in corpus])
    context = PluginContext(seed=3, work_dir=tmp_path / "w", plugin_factory=lambda kind, name, params: EchoASR())
    metric = WER(WER.Params(asr="echo", max_utterances=8), context)
    results = metric.compute(MetricInputs(original=corpus, anonymized=anonymized))
    assert [r.details["utterances"] for r in results if r.gender == "all"] == [8, 8]
    assert EchoASR.calls == 8, "the anonymized copy has the same ids and audio paths, so the cache serves it"
    chosen = metric.sample(corpus, {u.id: u.transcript for u in corpus})
    assert len({uid.split("-")[0] for uid in chosen}) == 4, "round-robin over speakers"
    again = WER(WER.Params(asr="echo", max_utterances=8), context).sample(corpus, {u.id: u.transcript for u in corpus})
    assert chosen == again
