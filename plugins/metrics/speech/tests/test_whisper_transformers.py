"""The transformers Whisper ASR transcribes as the VPC 2026 toolkit's InferenceWhisperASR does: the same
pipeline calls (batched up to 30 s, chunked 30 s / 5 s beyond, the set's language), on a tiny random-weight
Whisper folder in large-v3's layout (128 mel bins). The toolkit's calls are re-expressed from
evaluation/utility/asr/whisper_asr/inference.py (e6810a4: _transcribe_batch, _transcribe_file_chunked)."""

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_speech.tiny_whisper import tiny_whisper_folder
from vpeval_speech.whisper_transformers import WhisperTransformersASR


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_whisper_folder(tmp_path_factory.mktemp("whisper-hf"))


def toolkit_pipe(folder):
    """The toolkit's pipeline (CPU: float32), built from the folder as its __init__ builds it."""
    import torch
    from transformers import AutoModelForSpeechSeq2Seq, AutoProcessor, pipeline

    model = AutoModelForSpeechSeq2Seq.from_pretrained(folder, dtype=torch.float32, use_safetensors=True)
    processor = AutoProcessor.from_pretrained(folder)
    return pipeline(
        "automatic-speech-recognition",
        model=model,
        tokenizer=processor.tokenizer,
        feature_extractor=processor.feature_extractor,
        dtype=torch.float32,
        device="cpu",
        return_timestamps=False,
    )


def test_short_batched_and_long_chunked_equal_the_toolkit(tmp_path, folder):
    rng = np.random.default_rng(0)
    short = [rng.normal(0, 0.1, int(16000 * s)).astype(np.float32) for s in (1.0, 2.5, 30.0)]
    long = rng.normal(0, 0.1, 16000 * 41).astype(np.float32)
    asr = WhisperTransformersASR(
        params=WhisperTransformersASR.Params(model_path=str(folder), language="de", batch_size=8),
        context=PluginContext(seed=0, work_dir=tmp_path),
    )
    ours = [t.text for t in asr.transcribe_many([*short, long])]

    pipe = toolkit_pipe(folder)
    expected = [str(p["text"]) for p in pipe(short, batch_size=len(short), generate_kwargs={"language": "de"})]
    chunked = pipe(long, chunk_length_s=30, stride_length_s=5, ignore_warning=True, generate_kwargs={"language": "de"})
    assert ours == [*expected, str(chunked["text"])]
    assert asr.transcribe(long).text == ours[-1]  # one at a time: the same


def test_validate_names_a_folder_without_weights(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    missing = WhisperTransformersASR.missing_paths(WhisperTransformersASR.Params(model_path=str(tmp_path)))
    assert len(missing) == 1 and "model.safetensors" in missing[0]
