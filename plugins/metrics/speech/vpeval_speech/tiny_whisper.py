"""A tiny random-weight transformers Whisper folder in the layout of a local copy of openai/whisper-large-v3
(128 mel bins, multilingual language tokens, save_pretrained's files): for tests and for trying the VPC 2026
Track 2 recipe end to end without the released model (never results)."""

from __future__ import annotations

import json
from pathlib import Path

LANGUAGES = ("en", "zh", "de", "es", "fr", "ja")


def tiny_whisper_folder(folder: Path, seed: int = 0) -> Path:
    """A byte-level BPE tokenizer with Whisper's special tokens and a 1-layer, 16-wide Whisper."""
    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    merges = ["Ġ t", "h e", "Ġ a"]
    vocab.update((m.replace(" ", ""), len(vocab) + k) for k, m in enumerate(merges))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    eot = "<|endoftext|>"
    tokenizer = WhisperTokenizer(
        str(folder / "vocab.json"), str(folder / "merges.txt"), unk_token=eot, bos_token=eot, eos_token=eot,
        pad_token=eot,
    )  # fmt: skip
    specials = ["<|startoftranscript|>", *(f"<|{code}|>" for code in LANGUAGES), "<|translate|>", "<|transcribe|>"]
    specials += ["<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in [eot, *specials]}
    config = WhisperConfig(
        vocab_size=len(tokenizer), num_mel_bins=128, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, d_model=16, encoder_ffn_dim=32, decoder_ffn_dim=32, max_target_positions=64,
        decoder_start_token_id=ids["<|startoftranscript|>"], eos_token_id=ids[eot], pad_token_id=ids[eot],
        bos_token_id=ids[eot],
    )  # fmt: skip
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        decoder_start_token_id=config.decoder_start_token_id, eos_token_id=ids[eot], pad_token_id=ids[eot],
        bos_token_id=ids[eot], max_length=12, is_multilingual=True,
        lang_to_id={f"<|{code}|>": ids[f"<|{code}|>"] for code in LANGUAGES},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"], prev_sot_token_id=ids["<|startofprev|>"],
        begin_suppress_tokens=[], suppress_tokens=[],
    )  # fmt: skip
    model.save_pretrained(folder)
    features = WhisperFeatureExtractor(feature_size=128)
    WhisperProcessor(feature_extractor=features, tokenizer=tokenizer).save_pretrained(folder)
    features.save_pretrained(folder)  # preprocessor_config.json, as the hub copy of large-v3 has it
    return folder
