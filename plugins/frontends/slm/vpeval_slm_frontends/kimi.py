"""kimi: Kimi-Audio's speech interface, GLM-4-Voice semantic tokens plus Whisper-large-v3 features."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Params
from vpeval.errors import MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend
from vpeval_slm_frontends.weights import prefix_of, read_state_dict, require_folder

TOKENIZER_NEEDS = "config.json and model.safetensors of THUDM/glm-4-voice-tokenizer (Kimi-Audio's speech tokenizer)"
FEATURE_NEEDS = "config.json and model.safetensors of openai/whisper-large-v3 (Kimi-Audio's whisper-large-v3 folder)"
CHUNK_SECONDS = 30  # both Whisper encoders see at most 30 s at once


class KimiFrontend(TorchFrontend):
    """Kimi-Audio's input interface: semantic tokens at 12.5 Hz plus time-aligned Whisper features.

    Interface (seed 002): 16 kHz audio in; tokens [N, 1] (one codebook of 16384 entries in the real
    tokenizer) and features [N, 4 * 1280] (stack: Kimi-Audio concatenates the four 50 Hz
    whisper-large-v3 encoder frames of each 80 ms token; feature_pooling="mean" averages them
    instead), N = ceil(seconds * 12.5). frame_rate 12.5.

    Tokens: GLM-4-Voice's tokenizer, which Kimi-Audio uses, implemented on transformers' Whisper
    encoder: Whisper layers at 50 Hz, average pooling by 4 after layer pooling_position (16), and
    after layer quantize_position (16) each frame takes its nearest codeword (Euclidean) in the
    learned codebook; block-causal attention per quantize_causal_block_size frames as its config
    says. Audio is tokenized in 30 s chunks padded to whole 80 ms tokens, as in GLM-4-Voice.
    Features: whisper-large-v3's encoder on each 30 s chunk padded to Whisper's 30 s window.

    Weights (vpeval never downloads):
      weights: a folder with config.json (WhisperConfig fields plus pooling_kernel_size,
        pooling_type, pooling_position, quantize_vocab_size, quantize_position,
        quantize_causal_block_size, encoder_causal_convolution) and model.safetensors whose tensors
        are conv1.*, conv2.*, embed_positions.weight, layers.<i>.* (i < quantize_position) and
        codebook.weight, under any common prefix; that is THUDM/glm-4-voice-tokenizer as published.
        An optional preprocessor_config.json is not needed (128-band Whisper log-mel).
      feature_weights: a folder with config.json and model.safetensors of openai/whisper-large-v3
        (WhisperModel or WhisperForConditionalGeneration; only encoder tensors are read).
    config / feature_config (dicts of the same fields) build random-weight models, for tests.
    """

    name = "kimi"
    sample_rate = 16000
    frame_rate = 12.5

    class Params(Params):
        weights: str | None = Field(None, description=f"Local folder with {TOKENIZER_NEEDS}.")
        feature_weights: str | None = Field(None, description=f"Local folder with {FEATURE_NEEDS}.")
        config: dict[str, Any] | None = Field(
            None, description="Tokenizer config.json fields as a dict: builds random weights instead (tests)."
        )
        feature_config: dict[str, Any] | None = Field(
            None, description="A WhisperConfig as a dict for the feature encoder: random weights instead (tests)."
        )
        feature_pooling: Literal["stack", "mean"] = Field(
            "stack", description="stack: concatenate the 4 Whisper frames of a token (Kimi-Audio); mean: average them."
        )
        batch_size: int = Field(16, ge=1, le=4096, description="Waveforms per encode_batch batch (run's device).")

    def _load(self):
        from torch import nn
        from transformers import WhisperConfig, WhisperFeatureExtractor
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        from vpeval_slm_frontends.whisper_vq import VQSettings, WhisperVQTokenizer

        if self.params.config is not None:
            settings, whisper_fields = VQSettings.split(dict(self.params.config))
            tokenizer = WhisperVQTokenizer(whisper_fields, settings)
        else:
            folder = require_folder(self.name, "weights", self.params.weights, TOKENIZER_NEEDS)
            settings, whisper_fields = VQSettings.split(json.loads((folder / "config.json").read_text()))
            tokenizer = WhisperVQTokenizer(whisper_fields, settings)
            prefix = prefix_of(folder, "conv1.weight") or ""
            tokenizer.load_glm_state(read_state_dict(folder, prefix, "kimi tokenizer"), folder)
        if self.params.feature_config is not None:
            whisper = WhisperEncoder(WhisperConfig(**self.params.feature_config))
        else:
            folder = require_folder(self.name, "feature_weights", self.params.feature_weights, FEATURE_NEEDS)
            whisper = WhisperEncoder(WhisperConfig.from_pretrained(str(folder), local_files_only=True))
            prefix = prefix_of(folder, "encoder.conv1.weight")
            if prefix is None:
                raise MissingModelError(
                    f"The kimi frontend parameter feature_weights={folder} has no Whisper encoder tensors; "
                    f"point it at a folder with {FEATURE_NEEDS}."
                )
            state = read_state_dict(folder, prefix + "encoder.", "Whisper encoder")
            whisper.load_state_dict(state, strict=True)
        self.token_mel = WhisperFeatureExtractor(feature_size=tokenizer.encoder.config.num_mel_bins)
        self.feature_mel = WhisperFeatureExtractor(feature_size=whisper.config.num_mel_bins)
        self.window_frames = whisper.config.max_source_positions * 2
        return nn.ModuleDict({"tokenizer": tokenizer, "whisper": whisper}).to(self.device)

    def token_inputs(self, chunk: np.ndarray):
        """Log-mel [1, n_mels, T] padded to whole tokens, and its mask [1, T] (GLM-4-Voice's padding)."""
        mel = self.token_mel(
            chunk,
            sampling_rate=self.sample_rate,
            return_attention_mask=True,
            padding="longest",
            pad_to_multiple_of=self.model["tokenizer"].samples_per_token,
            return_tensors="pt",
        )
        return mel["input_features"].to(self.device), mel["attention_mask"].bool().to(self.device)

    def _features(self, hidden: np.ndarray, count: int) -> np.ndarray:
        """The 4 Whisper frames of each of `count` tokens, stacked or averaged, from a chunk's encoder output."""
        hidden = hidden[: 4 * count]
        if len(hidden) < 4 * count:  # a chunk of exactly 30 s: repeat the last frame
            hidden = np.concatenate([hidden, np.repeat(hidden[-1:], 4 * count - len(hidden), axis=0)])
        grouped = hidden.reshape(count, 4, -1)
        return grouped.reshape(count, -1) if self.params.feature_pooling == "stack" else grouped.mean(axis=1)

    def _encode_chunks(self, chunks: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(token ids [n], features [n, F]) of each <= 30 s chunk, params.batch_size chunks at a time.

        Tokens: each chunk's log-mel padded to whole tokens as GLM-4-Voice pads it, then zero-padded to the
        batch's longest; the padded frames are masked out of attention and dropped, and a zero mel frame is
        what the first convolution's own padding gives the last real frame, so the ids equal one chunk's
        alone. Features: every chunk is padded to Whisper's 30 s window anyway, so batches are stacks."""
        import torch

        model = self.model
        inputs = [self.token_inputs(chunk) for chunk in chunks]
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(chunks)
        for group in self.batches([frames.shape[-1] for frames, _ in inputs], exact=False):
            longest = max(inputs[i][0].shape[-1] for i in group)
            mel = torch.zeros(len(group), inputs[group[0]][0].shape[1], longest, device=self.device)
            valid = torch.zeros(len(group), longest, dtype=torch.bool, device=self.device)
            for row, index in enumerate(group):
                frames, mask = inputs[index]
                mel[row, :, : frames.shape[-1]] = frames[0]
                valid[row, : mask.shape[-1]] = mask[0]
            windows = self.feature_mel(
                [np.asarray(chunks[i], dtype=np.float32) for i in group],
                sampling_rate=self.sample_rate,
                padding="max_length",
                return_tensors="pt",
            )["input_features"][..., : self.window_frames].to(self.device)
            with torch.inference_mode(), self.context.autocast():
                ids, kept = model["tokenizer"](mel, valid)
                hidden = model["whisper"](windows).last_hidden_state
            ids, kept, hidden = ids.cpu().numpy(), kept.cpu().numpy(), hidden.float().cpu().numpy()
            for row, index in enumerate(group):
                tokens = ids[row][kept[row]].astype(np.int64)
                out[index] = (tokens, self._features(hidden[row], len(tokens)))
        return out  # type: ignore[return-value]

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        return self.encode_batch([audio])[0]

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """Every waveform cut into 30 s chunks (both Whisper encoders see at most 30 s), all chunks encoded
        in batches, then joined back per waveform."""
        step = CHUNK_SECONDS * self.sample_rate
        audios = [np.asarray(a, dtype=np.float32) for a in audios]
        owners, chunks = [], []
        for index, audio in enumerate(audios):
            for start in range(0, max(1, len(audio)), step):
                owners.append(index)
                chunks.append(audio[start : start + step])
        encoded = self._encode_chunks(chunks)
        size = int(self.model["tokenizer"].codebook.num_embeddings)
        out = []
        for index in range(len(audios)):
            parts = [encoded[k] for k, owner in enumerate(owners) if owner == index]
            tokens = np.concatenate([t for t, _ in parts])[:, None]
            features = np.concatenate([f for _, f in parts]).astype(np.float32)
            out.append(FrontendOutput(self.frame_rate, tokens, (size,), features))
        return out
