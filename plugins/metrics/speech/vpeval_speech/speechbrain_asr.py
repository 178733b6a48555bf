"""SpeechBrain EncoderASR folders (VPC 2024's wav2vec2 + CTC LibriSpeech model) as an `asr` for WER.

What `EncoderASR.from_hparams(source=folder).transcribe_batch` computes, built from the folder as data
(speechbrain_folder.py): the YAML's `encoder` module (wav2vec2, the DNN and CTC head, log-softmax) on
[B, T] audio with relative lengths, its `decoding_function` (speechbrain's CTC greedy decode), and the
sentencepiece `tokenizer` turning token ids into text. The wav2vec2 lobe is speechbrain's own class built
on a local transformers folder (never a hub download); the Pretrainer's checkpoints fill the modules.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import ASR, Params, Transcript
from vpeval.errors import MissingModelError
from vpeval_speech.speechbrain_folder import (
    WAV2VEC2,
    Graph,
    checkpoint_file,
    load_loadable,
    local_hf_folder,
    read_hparams,
    require_speechbrain,
)

GREEDY = ("speechbrain.decoders.ctc_greedy_decode", "speechbrain.decoders.ctc.ctc_greedy_decode")
WAV2VEC2_ARGUMENTS = ("output_norm", "freeze", "freeze_feature_extractor", "apply_spec_augment", "output_all_hiddens")


def wav2vec2_factory(folder: Path, override: str | None, save_path: Path, parameter: str):
    """Builds speechbrain's Wav2Vec2 lobe on the local transformers folder its `source` names."""

    def build(kwargs: dict[str, Any], where: str):
        from speechbrain.integrations.huggingface.wav2vec2 import Wav2Vec2

        unknown = sorted(set(kwargs) - {"source", "save_path", *WAV2VEC2_ARGUMENTS})
        if unknown:
            raise MissingModelError(f"{where}: the wav2vec2 lobe's arguments {unknown} are not ones vpeval passes on.")
        local = local_hf_folder(str(kwargs.get("source", "")), folder, override, parameter)
        if not any(local.glob("*.safetensors")) and not any(local.glob("*.bin")):
            raise MissingModelError(
                f"The transformers folder {local} has no weights (model.safetensors or pytorch_model.bin), which "
                "speechbrain's wav2vec2 lobe needs to build (the folder's wav2vec2.ckpt then replaces them)."
            )
        options = {k: kwargs[k] for k in WAV2VEC2_ARGUMENTS if k in kwargs}
        return Wav2Vec2(source=str(local), save_path=str(save_path), **options)

    return build


@functools.lru_cache(maxsize=2)
def load_encoder_asr(folder: str, hparams_file: str, wav2vec2_source: str | None, save_path: str):
    """(encoder module, decoding function, tokenizer, sample rate) of an EncoderASR folder, on the CPU."""
    require_speechbrain("speechbrain-asr")
    root = Path(folder)
    path = root / hparams_file
    values = read_hparams(path)
    special = {name: wav2vec2_factory(root, wav2vec2_source, Path(save_path), "wav2vec2_source") for name in WAV2VEC2}
    graph = Graph(values, path, special)
    for key in ("encoder", "decoding_function", "tokenizer"):
        if key not in values:
            raise MissingModelError(
                f"{path} has no `{key}`: an EncoderASR folder (speechbrain's wav2vec2 + CTC) declares encoder, "
                "decoding_function and tokenizer; EncoderDecoderASR folders are not read yet."
            )
    decoding = graph.get("decoding_function")
    if not isinstance(decoding, functools.partial) or f"{decoding.func.__module__}.{decoding.func.__name__}" not in (
        "speechbrain.decoders.ctc.ctc_greedy_decode",
    ):
        raise MissingModelError(
            f"{path}: decoding_function must be !name:speechbrain.decoders.ctc_greedy_decode (CTC greedy "
            "decoding, what VPC 2024's model uses); beam-search decoders are not read yet."
        )
    encoder = graph.get("encoder")
    tokenizer = graph.get("tokenizer")
    if type(tokenizer).__module__.split(".")[0] != "sentencepiece":
        raise MissingModelError(f"{path}: tokenizer must be !new:sentencepiece.SentencePieceProcessor.")
    loadables, paths = graph.pretrainer()
    for name, obj in loadables.items():
        load_loadable(obj, checkpoint_file(root, name, paths))
    encoder.eval()
    rate = values.get("sample_rate", 16000)
    return encoder, decoding, tokenizer, int(rate) if isinstance(rate, int) else 16000


class SpeechBrainASR(ASR):
    """SpeechBrain EncoderASR folder (wav2vec2 + CTC, VPC 2024's WER model) read safely, CTC greedy decoding."""

    name = "speechbrain-asr"
    device_sensitive = True
    sample_rate: ClassVar[int] = 16000  # checked against the folder's sample_rate when it loads

    class Params(Params):
        source: str = Field(
            description="A local SpeechBrain EncoderASR folder: hyperparams.yaml, the checkpoints its pretrainer "
            "names (wav2vec2.ckpt, asr.ckpt, tokenizer.ckpt), as VPC 2024's exp/asr folder."
        )
        hparams_file: str = Field("hyperparams.yaml", description="The YAML file in the folder.")
        wav2vec2_source: str | None = Field(
            None,
            description="A local transformers folder of the wav2vec2 the YAML names by hub id (for VPC 2024: "
            "facebook/wav2vec2-large-960h-lv60-self); unset: the YAML's source must be a local folder, or a hub "
            "cache snapshot inside the model folder.",
        )
        interface: Literal["EncoderASR"] = Field(
            "EncoderASR", description="SpeechBrain interface the folder is for (EncoderDecoderASR: not yet)."
        )
        batch_size: int = Field(
            1,
            ge=1,
            le=1024,
            description="Utterances per padded, length-sorted batch on a GPU (the CPU always transcribes one at a "
            "time, as transcribe_file does). 1: each utterance alone, the same text whatever else is scored. "
            "More is VPC 2024's eval_batchsize (8) and, as there, the texts then depend on the batch: speechbrain's "
            "wav2vec2 lobe normalises the padded waveform and its output over the padded length.",
        )

    _loaded = None
    _lock = threading.Lock()

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        out = []
        folder = Path(params.source).expanduser()
        if not (folder / params.hparams_file).is_file():
            out.append(
                f"source {folder} has no {params.hparams_file}: give a local SpeechBrain EncoderASR folder "
                "(VPC 2024: exp/asr, from its 01_download_data_model.sh)."
            )
        if params.wav2vec2_source and not (Path(params.wav2vec2_source).expanduser() / "config.json").is_file():
            out.append(f"wav2vec2_source {params.wav2vec2_source} is not a transformers folder (no config.json).")
        return out

    def folder(self) -> Path:
        folder = Path(self.params.source).expanduser()
        if not (folder / self.params.hparams_file).is_file():
            raise MissingModelError(
                f"The speechbrain-asr parameter source points at {folder}, which has no {self.params.hparams_file}: "
                "give a local SpeechBrain EncoderASR folder (VPC 2024: exp/asr)."
            )
        return folder

    def describe(self) -> str:
        return f"SpeechBrain EncoderASR folder {self.params.source} (CTC greedy), on {self.context.device}"

    def parts(self):
        """The folder's modules on the run's device, loaded once per process."""
        with self._lock:
            if self._loaded is None:
                encoder, decoding, tokenizer, rate = load_encoder_asr(
                    str(self.folder()),
                    self.params.hparams_file,
                    self.params.wav2vec2_source,
                    str(self.context.folder("hf-cache")),
                )
                if rate != self.sample_rate:
                    raise MissingModelError(
                        f"{self.folder()} declares sample_rate {rate}; vpeval feeds SpeechBrain ASR folders 16 kHz."
                    )
                self._loaded = (encoder.to(self.context.device), decoding, tokenizer)
            return self._loaded

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_loaded", None)
        return state

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """EncoderASR.transcribe_file of one waveform: a batch of one at relative length 1."""
        return self.transcribe_many([audio])[0]

    def transcribe_many(self, audios: list[np.ndarray]) -> list[Transcript]:
        """Texts of many waveforms; on a GPU in length-sorted padded batches (relative lengths, as VPC 2024's
        ASR dataset pads), on the CPU one at a time (equal to transcribe)."""
        batch = self.params.batch_size if self.context.on_gpu else 1
        order = sorted(range(len(audios)), key=lambda i: -len(audios[i]))
        out: list[Transcript | None] = [None] * len(audios)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            for i, text in zip(chunk, self.decode([audios[i] for i in chunk]), strict=True):
                out[i] = Transcript(text)
        return out  # type: ignore[return-value]

    def decode(self, audios: list[np.ndarray]) -> list[str]:
        import torch

        encoder, decoding, tokenizer = self.parts()
        longest = max(len(a) for a in audios)
        wavs = torch.zeros(len(audios), longest)
        for row, audio in enumerate(audios):
            wavs[row, : len(audio)] = torch.from_numpy(np.asarray(audio, dtype=np.float32))
        lengths = torch.tensor([len(a) / longest for a in audios])
        with torch.no_grad(), self.context.autocast():
            probabilities = encoder(wavs.to(self.context.device), lengths.to(self.context.device))
        tokens = decoding(probabilities.float(), lengths.to(self.context.device))
        return [tokenizer.decode_ids(sequence) for sequence in tokens]
