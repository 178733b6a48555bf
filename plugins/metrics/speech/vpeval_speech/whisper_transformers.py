"""Whisper through transformers' speech-recognition pipeline, as the VoicePrivacy 2026 toolkit transcribes
Track 2 (evaluation/utility/asr/whisper_asr/inference.py, e6810a4; chunking since dca37ab), from a local folder.

What the toolkit does, re-expressed: AutoModelForSpeechSeq2Seq (safetensors) in float16 on a GPU and float32
on the CPU, greedy generation with the set's language and no timestamps; audio up to 30 s in one window
(batched: Whisper pads every clip to 30 s, so batching does not change the features), longer audio through
the pipeline's chunking (30 s chunks, 5 s strides).

Where this differs from the toolkit: the toolkit loads the hub id openai/whisper-large-v3 (its config's
model_dir is not passed on), here a local folder; it reads each file with ffmpeg and measures the duration
with Python's wave module (a file wave cannot read, such as FLAC, is always chunked there), here vpeval's
loader gives 16 kHz samples and the duration is their count.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from vpeval.api import ASR, Params, Transcript
from vpeval.errors import MissingModelError

# Each entry: the file, or any of the files, the folder must hold (transformers 5 also reads processor_config.json).
FOLDER_FILES = (
    ("config.json",),
    ("model.safetensors",),
    ("preprocessor_config.json", "processor_config.json"),
    ("tokenizer.json", "vocab.json"),
)
_LOCK = threading.Lock()


def missing_files(path: Path) -> list[str]:
    return [" or ".join(names) for names in FOLDER_FILES if not any((path / n).is_file() for n in names)]


@functools.lru_cache(maxsize=2)
def load_pipeline(path: str, device: str, half: bool):
    """transformers' ASR pipeline on the local folder (no hub), as the toolkit builds it."""
    import torch
    from transformers import AutoModelForSpeechSeq2Seq, AutoProcessor, pipeline

    dtype = torch.float16 if half else torch.float32
    model = AutoModelForSpeechSeq2Seq.from_pretrained(
        path, dtype=dtype, low_cpu_mem_usage=True, use_safetensors=True, local_files_only=True
    )
    model.to(device)
    processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    return pipeline(
        "automatic-speech-recognition",
        model=model,
        tokenizer=processor.tokenizer,
        feature_extractor=processor.feature_extractor,
        dtype=dtype,
        device=device,
        return_timestamps=False,
    )


class WhisperTransformersASR(ASR):
    """Whisper (large-v3 for VPC 2026 Track 2) through transformers' pipeline, as the VPC 2026 toolkit runs it."""

    name = "whisper-transformers"
    sample_rate = 16000
    device_sensitive = True  # float16 on a GPU, float32 on the CPU (the toolkit's choice)

    class Params(Params):
        model_path: str = Field(
            description="A local transformers Whisper folder (a copy of openai/whisper-large-v3: config.json, "
            "model.safetensors, preprocessor_config.json, the tokenizer files)."
        )
        language: str | None = Field("en", description="Whisper's language code; None lets the model detect it.")
        chunk_length_s: float = Field(30.0, gt=0, le=30, description="Audio longer than this is chunked.")
        stride_length_s: float = Field(5.0, ge=0, le=15, description="The chunks' strides (the toolkit's 5 s).")
        batch_size: int = Field(8, ge=1, le=256, description="Short clips per batch (the toolkit's eval_batchsize).")
        device: Literal["run", "cpu", "cuda"] = Field("run", description="run: the experiment's device.")

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        path = Path(params.model_path).expanduser()
        missing = missing_files(path)
        if not missing:
            return []
        return [f"model_path {path} is not a transformers Whisper folder (it lacks {', '.join(missing)})."]

    def torch_device(self) -> str:
        return self.context.device if self.params.device == "run" else self.params.device

    def describe(self) -> str:
        device = self.torch_device()
        precision = "float16" if device.startswith("cuda") else "float32"
        return f"transformers Whisper pipeline at {self.params.model_path}, {precision}, greedy, on {device}"

    @property
    def pipe(self):
        path = Path(self.params.model_path).expanduser()
        if missing_files(path):
            raise MissingModelError(self.missing_paths(self.params)[0])
        device = self.torch_device()
        return load_pipeline(str(path), device, device.startswith("cuda"))

    def generate_kwargs(self) -> dict:
        return {"language": self.params.language} if self.params.language else {}

    def transcribe(self, audio: np.ndarray) -> Transcript:
        return self.transcribe_many([audio])[0]

    def transcribe_many(self, audios: list[np.ndarray]) -> list[Transcript]:
        """Short clips in batches, each long one chunked on its own, as the toolkit splits them."""
        audios = [np.ascontiguousarray(a, dtype=np.float32) for a in audios]
        limit = self.params.chunk_length_s * self.sample_rate
        short = [i for i, a in enumerate(audios) if len(a) <= limit]
        texts: dict[int, str] = {}
        with _LOCK:  # one pipeline call at a time (the pipeline is shared)
            for start in range(0, len(short), self.params.batch_size):
                part = short[start : start + self.params.batch_size]
                out = self.pipe([audios[i] for i in part], batch_size=len(part), generate_kwargs=self.generate_kwargs())
                texts.update((i, str(o["text"])) for i, o in zip(part, out, strict=True))
            for i in (i for i in range(len(audios)) if i not in texts):
                out = self.pipe(
                    audios[i],
                    chunk_length_s=self.params.chunk_length_s,
                    stride_length_s=self.params.stride_length_s,
                    ignore_warning=True,
                    generate_kwargs=self.generate_kwargs(),
                )
                texts[i] = str(out["text"])
        return [Transcript(texts[i]) for i in range(len(audios))]
