"""wer on a GPU run hands an ASR with transcribe_many the uncached utterances in batches, with the texts that
one-by-one transcription gives, and caches them as the per-utterance path does."""

from dataclasses import replace

import pytest

from vpeval.api import MetricInputs
from vpeval.testing.dummies import make_corpus
from vpeval_speech.wer import WER


def test_gpu_run_batches_through_transcribe_many(tmp_path, scripted_asr, make_context, key_of_audio):
    original = make_corpus(tmp_path / "orig", speakers=2, utterances=3, seconds=0.3, seed=1, name="orig")
    texts = {key_of_audio(u.load(16000)): f"word{i} other" for i, u in enumerate(original)}

    class BatchingASR(scripted_asr):
        batches: list[int] = []

        def transcribe_many(self, audios):
            self.batches.append(len(audios))
            return [self.transcribe(a) for a in audios]

    one_by_one = WER(context=make_context(tmp_path / "cpu", scripted_asr(texts))).compute(
        MetricInputs(original=original)
    )
    asr = BatchingASR(texts)
    context = replace(make_context(tmp_path / "gpu", asr), device="cuda")  # no torch runs in this ASR
    batched = WER(context=context).compute(MetricInputs(original=original))
    assert [r.value for r in batched] == pytest.approx([r.value for r in one_by_one])
    assert asr.batches == [len(original)] and asr.calls == len(original)
    again = WER(context=context).compute(MetricInputs(original=original))  # all cached: no batch at all
    assert asr.batches == [len(original)] and [r.value for r in again] == [r.value for r in batched]
    assert (tmp_path / "gpu" / "work" / "hyp_original.txt").read_text().count("\n") == len(original)
