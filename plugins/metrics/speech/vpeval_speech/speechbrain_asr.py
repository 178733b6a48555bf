"""SpeechBrain ASR folders as an `asr` for WER: EncoderASR (VPC 2024's wav2vec2 + CTC LibriSpeech model)
and EncoderDecoderASR (speechbrain 1.x transformer + CTC/attention beam search + transformer LM).

What `EncoderASR` / `EncoderDecoderASR.from_hparams(source=folder).transcribe_batch` computes, built from
the folder as data (speechbrain_folder.py): the `modules` encoder on [B, T] audio with relative lengths,
then the `decoding_function` (speechbrain's CTC greedy decode) or the `decoder` beam searcher, and the
sentencepiece `tokenizer` turning token ids into text. A wav2vec2 lobe is speechbrain's own class built on
a local transformers folder (never a hub download); the Pretrainer's checkpoints fill the modules.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
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

WAV2VEC2_ARGUMENTS = ("output_norm", "freeze", "freeze_feature_extractor", "apply_spec_augment", "output_all_hiddens")


def wav2vec2_factory(folder: Path, override: str | None, save_path: Path, parameter: str):
    """Builds speechbrain's Wav2Vec2 lobe on the local transformers folder its `source` names."""

    def build(kwargs: dict[str, Any], where: str):
        from speechbrain.integrations.huggingface.wav2vec2 import Wav2Vec2

        # speechbrain 0.5's HuggingFaceWav2Vec2 also took `pretrain` (load the hub weights first), which the
        # folder's wav2vec2.ckpt makes moot; the cache path is vpeval's own.
        unknown = sorted(set(kwargs) - {"source", "save_path", "pretrain", *WAV2VEC2_ARGUMENTS})
        if unknown:
            raise MissingModelError(f"{where}: the wav2vec2 lobe's arguments {unknown} are not ones vpeval passes on.")
        local = local_hf_folder(str(kwargs.get("source", "")), folder, override, parameter)
        if not (local / "preprocessor_config.json").is_file():
            raise MissingModelError(
                f"The transformers folder {local} has no preprocessor_config.json, which speechbrain's wav2vec2 lobe "
                "reads (whether to normalise the waveform): copy it from the original model's files."
            )
        if not any(local.glob("*.safetensors")) and not any(local.glob("*.bin")):
            raise MissingModelError(
                f"The transformers folder {local} has no weights (model.safetensors or pytorch_model.bin), which "
                "speechbrain's wav2vec2 lobe needs to build (the folder's wav2vec2.ckpt then replaces them)."
            )
        options = {k: kwargs[k] for k in WAV2VEC2_ARGUMENTS if k in kwargs}
        return Wav2Vec2(source=str(local), save_path=str(save_path), **options)

    return build


@dataclass
class LoadedASR:
    """The modules of an ASR folder and how its interface runs them."""

    interface: str  # EncoderASR or EncoderDecoderASR
    encoder: Any
    decoder: Any  # EncoderASR: the decoding function; EncoderDecoderASR: the beam searcher module
    tokenizer: Any
    transformer: Any  # EncoderDecoderASR with transformer_beam_search: modules.transformer.encode runs first
    sample_rate: int

    def to(self, device: str) -> LoadedASR:
        for module in (self.encoder, self.decoder, self.transformer):
            if hasattr(module, "eval"):
                module.to(device).eval()
        return self


def detect_interface(values: dict[str, Any]) -> str:
    """EncoderASR folders decode with a decoding_function, EncoderDecoderASR ones with modules.decoder."""
    modules = values.get("modules") if isinstance(values.get("modules"), dict) else {}
    return "EncoderDecoderASR" if "decoder" in modules else "EncoderASR"


@functools.lru_cache(maxsize=2)
def load_asr(folder: str, hparams_file: str, interface: str, wav2vec2_source: str | None, save_path: str) -> LoadedASR:
    """The modules of an EncoderASR or EncoderDecoderASR folder, on the CPU, as from_hparams builds them."""
    require_speechbrain("speechbrain-asr")
    root = Path(folder)
    path = root / hparams_file
    values = read_hparams(path)
    special = {name: wav2vec2_factory(root, wav2vec2_source, Path(save_path), "wav2vec2_source") for name in WAV2VEC2}
    graph = Graph(values, path, special)
    kind = detect_interface(values) if interface == "auto" else interface
    modules = values.get("modules") if isinstance(values.get("modules"), dict) else {}

    def module(name: str):
        # Pretrained.mods are the YAML's `modules` entries; older folders name the encoder at top level only.
        return graph.resolve(modules[name], "modules") if name in modules else graph.get(name)

    needed = ("encoder", "decoding_function", "tokenizer") if kind == "EncoderASR" else ("tokenizer",)
    for key in needed:
        if key not in values:
            raise MissingModelError(
                f"{path} has no `{key}`, which a SpeechBrain {kind} folder declares (speechbrain's {kind} needs "
                f"{', '.join(needed)}{'' if kind == 'EncoderASR' else ' and modules encoder and decoder'})."
            )
    tokenizer = graph.get("tokenizer")
    if type(tokenizer).__module__.split(".")[0] != "sentencepiece":
        raise MissingModelError(f"{path}: tokenizer must be !new:sentencepiece.SentencePieceProcessor.")
    transformer = None
    if kind == "EncoderASR":
        decoder = graph.get("decoding_function")
        name = f"{getattr(decoder, 'func', decoder).__module__}.{getattr(decoder, 'func', decoder).__name__}"
        if not isinstance(decoder, functools.partial) or name != "speechbrain.decoders.ctc.ctc_greedy_decode":
            raise MissingModelError(
                f"{path}: decoding_function must be !name:speechbrain.decoders.ctc_greedy_decode (CTC greedy "
                "decoding, what VPC 2024's model uses); CTC beam-search decoders are not read yet."
            )
    else:
        if "decoder" not in modules or "encoder" not in modules:
            raise MissingModelError(f"{path}: an EncoderDecoderASR folder lists encoder and decoder under modules.")
        decoder = module("decoder")
        if values.get("transformer_beam_search") is True:
            transformer = module("transformer")
    encoder = module("encoder")
    loadables, paths = graph.pretrainer()
    for name, obj in loadables.items():
        load_loadable(obj, checkpoint_file(root, name, paths))
    rate = values.get("sample_rate", 16000)
    loaded = LoadedASR(kind, encoder, decoder, tokenizer, transformer, int(rate) if isinstance(rate, int) else 16000)
    from vpeval_torch.autocast_copies import weights_under_autocast
    from vpeval_torch.ssl_masked import time_major_under_autocast

    time_major_under_autocast(encoder)  # cpu_precision bf16: wav2vec2's CNN as bf16 products (fp32 unchanged)
    weights_under_autocast(encoder)  # bf16: weights cast once, not per utterance; rows in a few shapes
    return loaded.to("cpu")


class SpeechBrainASR(ASR):
    """SpeechBrain EncoderASR (wav2vec2 + CTC, VPC 2024's WER model) or EncoderDecoderASR folder, read safely."""

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
        interface: Literal["auto", "EncoderASR", "EncoderDecoderASR"] = Field(
            "auto",
            description="SpeechBrain interface the folder is for; auto: EncoderDecoderASR when its modules list a "
            "decoder (a speechbrain 1.x beam searcher), else EncoderASR.",
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
        cpu_batch_size: int = Field(
            1,
            ge=1,
            le=256,
            description="Utterances per masked batch on the CPU (similar lengths together, input order restored), "
            "for wav2vec2 + CTC folders (VPC 2024's): each waveform normalised over its own samples, the model "
            "masked to its own frames, so every text is the one it gets alone. 1 (default): one at a time, which "
            "costs less CPU there (batches pay for their padding: 8 took 1.15x the CPU at wav2vec2-base size). "
            "Either way the run's workers transcribe side by side as threads.",
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
            out.append(
                f"wav2vec2_source {params.wav2vec2_source} is not a transformers folder (no config.json; a local "
                "copy of the hub model the ASR's YAML names, facebook/wav2vec2-large-960h-lv60-self for VPC)."
            )
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
        """Which folder and interface transcribe (the interface read from the YAML when auto), for reports."""
        interface = self.params.interface
        if interface == "auto":
            interface = detect_interface(read_hparams(self.folder() / self.params.hparams_file))
        return f"SpeechBrain {interface} folder {self.params.source}, on {self.context.device}"

    def parts(self) -> LoadedASR:
        """The folder's modules on the run's device, loaded once per process."""
        with self._lock:
            if self._loaded is None:
                loaded = load_asr(
                    str(self.folder()),
                    self.params.hparams_file,
                    self.params.interface,
                    self.params.wav2vec2_source,
                    str(self.context.folder("hf-cache")),
                )
                if loaded.sample_rate != self.sample_rate:
                    raise MissingModelError(
                        f"{self.folder()} declares sample_rate {loaded.sample_rate}; vpeval feeds SpeechBrain ASR "
                        "folders 16 kHz."
                    )
                self._loaded = loaded.to(self.context.device)
            return self._loaded

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_loaded", None)
        return state

    # How read() reads a file, part of the transcript cache's key.
    reading: ClassVar[str] = "file rate, then torchaudio Resample to 16 kHz (VPC 2024's ASRDataset)"

    def read(self, utterance) -> np.ndarray:
        """The utterance as VPC 2024's ASRDataset reads it: at the file's rate, then asr_model.audio_normalizer
        (speechbrain's AudioNormalizer: torchaudio's Resample with its defaults to 16 kHz, channels averaged)."""
        from vpeval.audio import read_audio

        samples, rate = read_audio(utterance.path, None, utterance.channel)
        if rate == self.sample_rate:
            return samples
        import torch
        from torchaudio.transforms import Resample

        return Resample(orig_freq=rate, new_freq=self.sample_rate)(torch.from_numpy(samples)).numpy()

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """EncoderASR.transcribe_file of one waveform: a batch of one at relative length 1."""
        return self.transcribe_many([audio])[0]

    @property
    def transcribes_many_on_cpu(self) -> bool:
        """Whether wer should hand transcribe_many the uncached utterances in chunks on the CPU, which spreads
        them over the run's workers as threads: an EncoderASR folder (read from the YAML: a cached rerun loads no
        model). EncoderDecoderASR's beam searcher is not known to be safe in several threads at once."""
        if self.context.on_gpu:
            return False
        interface = self.params.interface
        if interface == "auto":
            interface = detect_interface(read_hparams(self.folder() / self.params.hparams_file))
        return interface == "EncoderASR"

    def masked_parts(self):
        """(wav2vec2 lobe, the per-frame modules after it) where the folder is wav2vec2 + CTC with only per-frame
        layers after the lobe (VPC 2024's EncoderASR: DNN, batch norm, CTC linear, log-softmax), else None."""
        loaded = self.parts()
        if loaded.interface != "EncoderASR":
            return None
        return _masked_split(loaded.encoder)

    def transcribe_many(self, audios: list[np.ndarray]) -> list[Transcript]:
        """Texts of many waveforms; on a GPU in length-sorted padded batches (relative lengths, as VPC 2024's
        ASR dataset pads); on the CPU one at a time, or in masked length buckets where cpu_batch_size > 1 and
        the folder allows (each text the one transcribe gives either way)."""
        if not self.context.on_gpu:
            return self.transcribe_on_cpu(audios)
        batch = self.params.batch_size
        order = sorted(range(len(audios)), key=lambda i: -len(audios[i]))
        out: list[Transcript | None] = [None] * len(audios)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            for i, text in zip(chunk, self.decode([audios[i] for i in chunk]), strict=True):
                out[i] = Transcript(text)
        return out  # type: ignore[return-value]

    def transcribe_on_cpu(self, audios: list[np.ndarray]) -> list[Transcript]:
        """Texts of many waveforms on the CPU, in input order: each alone, or masked buckets of cpu_batch_size
        (vpeval_torch.ssl_masked). An EncoderASR folder's groups run side by side on the run's workers as
        threads, each at the run's torch thread count (vpeval_torch.threads): the groups depend on the
        waveforms and cpu_batch_size only, so the texts are those of any core count."""
        from vpeval_torch.batching import length_buckets
        from vpeval_torch.threads import grouped_map

        self.context.apply_threads()
        masked = self.params.cpu_batch_size > 1 and self.masked_parts() is not None
        if masked:
            max_samples = MASKED_BATCH_SECONDS * self.sample_rate
            groups = length_buckets([len(a) for a in audios], self.params.cpu_batch_size, max_samples)
        else:
            groups = [[i] for i in range(len(audios))]
        decode = self.decode_masked if masked else self.decode
        workers = self.context.workers if self.parts().interface == "EncoderASR" else 1
        texts = grouped_map(
            lambda group: decode([audios[i] for i in group]), groups, len(audios), workers, self.context.threads
        )
        return [Transcript(text) for text in texts]

    def decode(self, audios: list[np.ndarray]) -> list[str]:
        """transcribe_batch of the interface on these waveforms, zero-padded, with relative lengths."""
        import torch

        loaded = self.parts()
        device = self.context.device
        longest = max(len(a) for a in audios)
        wavs = torch.zeros(len(audios), longest)
        for row, audio in enumerate(audios):
            wavs[row, : len(audio)] = torch.from_numpy(np.asarray(audio, dtype=np.float32))
        lengths = torch.tensor([len(a) / longest for a in audios]).to(device)
        with torch.no_grad(), self.context.autocast():
            encoded = loaded.encoder(wavs.to(device), lengths)
            if loaded.interface == "EncoderASR":
                tokens = loaded.decoder(encoded.float(), lengths)
            else:
                if loaded.transformer is not None:
                    encoded = loaded.transformer.encode(encoded, lengths)
                tokens, _, _, _ = loaded.decoder(encoded, lengths)
        return [loaded.tokenizer.decode_ids(_ids(sequence)) for sequence in tokens]

    def decode_masked(self, audios: list[np.ndarray]) -> list[str]:
        """One masked batch: the lobe on each waveform's own samples and frames, the per-frame modules, and CTC
        greedy decoding of each row's own frames (decode() of a batch of one, row by row)."""
        import torch

        from vpeval_torch.ssl_masked import speechbrain_wav2vec2

        loaded = self.parts()
        lobe, rest = self.masked_parts()
        ones = torch.ones(1, device=self.context.device)
        with torch.no_grad(), self.context.autocast():
            encoded, frames = speechbrain_wav2vec2(lobe, audios, self.context.device)
            for module in rest:
                encoded = module(encoded)
                if isinstance(encoded, tuple):
                    encoded = encoded[0]
            tokens = [loaded.decoder(encoded[b : b + 1, :n].float(), ones)[0] for b, n in enumerate(frames.tolist())]
        return [loaded.tokenizer.decode_ids(_ids(sequence)) for sequence in tokens]


MASKED_BATCH_SECONDS = 160  # padded audio of one masked CPU batch (batch x longest), bounding its memory
# Layers that act on each frame alone (eval mode: batch norm with its running statistics, dropout off).
PER_FRAME = (
    "speechbrain.nnet.linear.Linear",
    "speechbrain.nnet.normalization.BatchNorm1d",
    "speechbrain.nnet.normalization.LayerNorm",
    "speechbrain.nnet.activations.Softmax",
    "torch.nn.modules.activation.LeakyReLU",
    "torch.nn.modules.activation.ReLU",
    "torch.nn.modules.activation.GELU",
    "torch.nn.modules.activation.Tanh",
    "torch.nn.modules.dropout.Dropout",
    "torch.nn.modules.linear.Identity",
)


def _masked_split(encoder):
    """(lobe, per-frame modules) of a speechbrain Sequential whose first layer is the wav2vec2 lobe, else None."""
    from vpeval_torch.ssl_masked import masked_lobe

    children = list(encoder.values()) if hasattr(encoder, "values") else [encoder]
    if not children or not masked_lobe(children[0]) or not all(_per_frame(m) for m in children[1:]):
        return None
    return children[0], children[1:]


def _per_frame(module) -> bool:
    """A layer of PER_FRAME, or a speechbrain Sequential of them (LayerNorm over its last dimension only)."""
    name = f"{type(module).__module__}.{type(module).__name__}"
    if name in ("speechbrain.nnet.containers.Sequential", "speechbrain.nnet.containers.LengthsCapableSequential"):
        return all(_per_frame(m) for m in module.values())
    if name == "speechbrain.nnet.normalization.LayerNorm":
        return len(tuple(module.norm.normalized_shape)) == 1
    if name == "speechbrain.nnet.activations.Softmax":
        return module.dim == -1
    return name in PER_FRAME


def _ids(sequence) -> list[int]:
    """Token ids as plain ints (the beam searcher returns tensors, greedy CTC lists)."""
    return [int(t) for t in (sequence.tolist() if hasattr(sequence, "tolist") else sequence)]
