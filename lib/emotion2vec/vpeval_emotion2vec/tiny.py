"""A tiny random-weight emotion2vec+ folder in the released layout (config.yaml, model.pt, tokens.txt), built with
FunASR's own Emotion2vec class: for tests and for trying the VPC 2026 Track 2 recipe (never results)."""

from __future__ import annotations

from pathlib import Path

# emotion2vec_plus_large's tokens.txt: the 9 classes in the model's output order.
TOKENS = ("生气/angry", "厌恶/disgusted", "恐惧/fearful", "开心/happy", "中立/neutral", "其他/other", "难过/sad",
          "吃惊/surprised", "<unk>")  # fmt: skip

AUDIO = {
    "type": "AUDIO", "prenet_depth": 1, "prenet_layerdrop": 0.0, "prenet_dropout": 0.0,
    "start_drop_path_rate": 0.0, "end_drop_path_rate": 0.0, "num_extra_tokens": 0, "init_extra_token_zero": True,
    "mask_noise_std": 0.01, "mask_prob_min": None, "mask_prob": 0.5, "inverse_mask": False,
    "mask_prob_adjust": 0.05, "keep_masked_pct": 0.0, "mask_length": 5, "add_masks": False, "remove_masks": False,
    "mask_dropout": 0.0, "encoder_zero_mask": True, "mask_channel_prob": 0.0, "mask_channel_length": 64,
    "ema_local_encoder": False, "local_grad_mult": 1.0, "use_alibi_encoder": True, "alibi_scale": 1.0,
    "learned_alibi": False, "alibi_max_pos": None, "learned_alibi_scale": True,
    "learned_alibi_scale_per_head": True, "learned_alibi_scale_per_layer": False, "num_alibi_heads": 2,
    "model_depth": 1, "decoder": None, "extractor_mode": "layer_norm",
    "feature_encoder_spec": "[(16, 10, 5)] + [(16, 3, 2)] * 2", "conv_pos_width": 6, "conv_pos_groups": 2,
    "conv_pos_depth": 2, "conv_pos_pre_ln": False,
}  # fmt: skip
MODEL = {
    "loss_beta": 0.0, "loss_scale": None, "depth": 1, "start_drop_path_rate": 0.0, "end_drop_path_rate": 0.0,
    "num_heads": 2, "norm_eps": 1e-05, "norm_affine": True, "encoder_dropout": 0.1, "post_mlp_drop": 0.1,
    "attention_dropout": 0.1, "activation_dropout": 0.0, "dropout_input": 0.0, "layerdrop": 0.0, "embed_dim": 16,
    "mlp_ratio": 2.0, "layer_norm_first": False, "average_top_k_layers": 1, "end_of_block_targets": False,
    "clone_batch": 1, "normalize": True, "modalities": {"audio": AUDIO},
}  # fmt: skip


def tiny_folder(folder: Path, seed: int = 0) -> Path:
    """Emotion2vec with one 16-wide block and a 9-class head, random weights, saved as FunASR reads a folder."""
    import torch
    import yaml
    from funasr.models.emotion2vec.model import Emotion2vec

    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "Emotion2vec",
        "model_conf": MODEL,
        "tokenizer": "CharTokenizer",
        "tokenizer_conf": {"unk_symbol": "<unk>", "split_with_space": True},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    (folder / "tokens.txt").write_text("\n".join(TOKENS), encoding="utf-8")
    torch.manual_seed(seed)
    model = Emotion2vec(model_conf=MODEL, vocab_size=len(TOKENS))
    with torch.no_grad():  # a head that spreads its outputs, so argmax differs between utterances
        model.proj.weight.mul_(4.0)
    torch.save(model.state_dict(), folder / "model.pt")
    return folder
