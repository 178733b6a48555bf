"""The conversion model: StreamVoiceAnon's dual autoregressive transformer (dual_ar_delay_0_8.pth).

ARVCWrapper (modules/arvc_wrapper.py) around DualARWrapper / DualARTransformer (modules/dual_ar_stream.py):
content tokens are embedded (`embedding`), the speaker prompt is 32 timbre latents (`context_in`) and
one style vector (`style_in`); the slow transformer reads, after the 33 speaker positions, content and
acoustic frames alternately with the acoustic stream `delay` frames behind (`wait4start_embedding` fills
the first gap, `wait4end_embedding` the last), so acoustic frame t is predicted after content frame
t + delay; the fast transformer then draws the 8 codebooks of frame t one after another.

Generation is the published `generate` (reference frames as an in-context prompt) with a key/value
cache, sampling as `decode_one_token_ar` (top-p 0.7 on the logits, then temperature 0.7) from a torch
Generator the caller seeds. The slow head's own token (`output`, a training target) is loaded but not
drawn: it never feeds back. When the sequence would pass the rotary table (max_seq_len) the prompt is
refilled with the reference and the last `buffer_frames` frames, as the published streaming loop does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vpeval_streamvoiceanon.blocks import RMSNorm, SwiGLU, apply_rotary, rotary_table


@dataclass
class LMConfig:
    """configs/hydra_arcs/vc/firefly_arvc_bsq_8192_delay0_8.yaml."""

    content_vocab: int = 8192  # embedding.num_embeddings
    context_dim: int = 128
    style_dim: int = 192
    model_dim: int = 768
    max_seq_len: int = 2048
    n_layer: int = 12
    n_head: int = 12
    n_local_heads: int = -1
    intermediate_size: int = 2304
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    vocab_size: int = 8192
    codebook_size: int = 1000
    num_codebooks: int = 8
    fast_dim: int = 768
    fast_n_head: int = 12
    fast_n_local_heads: int = -1
    fast_intermediate_size: int = 2304
    n_fast_layer: int = 4
    tie_word_embeddings: bool = False
    delay: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4, 5, 6, 7, 8])

    @property
    def max_delay(self) -> int:
        return max(self.delay)


class Attention(nn.Module):
    def __init__(self, dim: int, n_head: int, n_local: int):
        super().__init__()
        self.n_head, self.n_local = n_head, (n_local if n_local > 0 else n_head)
        self.head_dim = dim // n_head
        self.wqkv = nn.Linear(dim, (self.n_head + 2 * self.n_local) * self.head_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x: Tensor, table: Tensor, mask: Tensor, cache: list | None) -> Tensor:
        b, s, d = x.shape
        kv = self.n_local * self.head_dim
        q, k, v = self.wqkv(x).split([d, kv, kv], dim=-1)
        q = apply_rotary(q.view(b, s, self.n_head, self.head_dim), table).transpose(1, 2)
        k = apply_rotary(k.view(b, s, self.n_local, self.head_dim), table).transpose(1, 2)
        v = v.view(b, s, self.n_local, self.head_dim).transpose(1, 2)
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        repeat = self.n_head // self.n_local
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k.to(q.dtype), v.to(q.dtype), attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, dim: int, n_head: int, n_local: int, hidden: int, eps: float):
        super().__init__()
        self.attention = Attention(dim, n_head, n_local)
        self.feed_forward = SwiGLU(dim, hidden)
        self.ffn_norm = RMSNorm(dim, eps)
        self.attention_norm = RMSNorm(dim, eps)

    def forward(self, x: Tensor, table: Tensor, mask: Tensor, cache: list | None = None) -> Tensor:
        h = x + self.attention(self.attention_norm(x), table, mask, cache)
        return h + self.feed_forward(self.ffn_norm(h))


class DualARTransformer(nn.Module):
    """Slow transformer over frames, fast transformer over one frame's codebooks (key names as published)."""

    def __init__(self, c: LMConfig):
        super().__init__()
        self.config = c
        self.embeddings = nn.Embedding(c.vocab_size, c.model_dim)
        self.codebook_embeddings = nn.Embedding(c.codebook_size * c.num_codebooks, c.model_dim)
        self.layers = nn.ModuleList(
            Block(c.model_dim, c.n_head, c.n_local_heads, c.intermediate_size, c.norm_eps) for _ in range(c.n_layer)
        )
        self.norm = RMSNorm(c.model_dim, c.norm_eps)
        if not c.tie_word_embeddings:
            self.output = nn.Linear(c.model_dim, c.vocab_size, bias=False)
        self.fast_project_in = nn.Linear(c.model_dim, c.fast_dim) if c.fast_dim != c.model_dim else nn.Identity()
        self.fast_embeddings = nn.Embedding(c.codebook_size, c.fast_dim)
        self.fast_layers = nn.ModuleList(
            Block(c.fast_dim, c.fast_n_head, c.fast_n_local_heads, c.fast_intermediate_size, c.norm_eps)
            for _ in range(c.n_fast_layer)
        )
        self.fast_norm = RMSNorm(c.fast_dim, c.norm_eps)
        self.fast_output = nn.Linear(c.fast_dim, c.codebook_size, bias=False)
        self.register_buffer("freqs", rotary_table(c.max_seq_len, c.model_dim // c.n_head, c.rope_base), False)
        self.register_buffer(
            "fast_freqs", rotary_table(c.num_codebooks, c.fast_dim // c.fast_n_head, c.rope_base), False
        )

    def embed(self, codes: Tensor) -> Tensor:
        """codes [B, codebooks, T] -> [B, T, D]: the sum of each codebook's embedding (offset tables)."""
        offsets = torch.arange(self.config.num_codebooks, device=codes.device) * self.config.codebook_size
        return self.codebook_embeddings(codes.long() + offsets[None, :, None]).sum(dim=1)

    def slow(self, x: Tensor, start: int, caches: list[list]) -> Tensor:
        """New positions start.. of the slow stream (hidden states before the final norm, as published)."""
        s = x.shape[1]
        if start + s > self.freqs.shape[0]:
            raise ValueError(f"position {start + s} passes the model's max_seq_len {self.freqs.shape[0]}")
        table = self.freqs[start : start + s]
        rows = torch.arange(start, start + s, device=x.device)
        mask = torch.arange(start + s, device=x.device)[None, :] <= rows[:, None]
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, table, mask[None, None], cache)
        return x

    def fast_logits(self, x: Tensor) -> Tensor:
        """x [B, k, fast_dim] (hidden state, then the drawn codebooks' embeddings) -> logits of codebook k-1."""
        k = x.shape[1]
        mask = torch.ones(k, k, dtype=torch.bool, device=x.device).tril()
        for layer in self.fast_layers:
            x = layer(x, self.fast_freqs[:k], mask[None, None])
        return self.fast_output(self.fast_norm(x[:, -1]))

    def draw_frame(self, hidden: Tensor, sampler: Sampler) -> Tensor:
        """The 8 codebooks of one frame from the slow hidden state [B, D] -> [B, codebooks]."""
        x = self.fast_project_in(hidden)[:, None]
        codes = []
        for i in range(self.config.num_codebooks):
            code = sampler(self.fast_logits(x))
            codes.append(code)
            if i + 1 < self.config.num_codebooks:
                x = torch.cat([x, self.fast_embeddings(code)[:, None]], dim=1)
        return torch.stack(codes, dim=1)


class Sampler:
    """logits_to_probs + multinomial_sample_one_no_sync of dual_ar_stream.py, from a seeded generator."""

    def __init__(self, generator: torch.Generator, temperature: float = 0.7, top_p: float = 0.7):
        self.generator, self.temperature, self.top_p = generator, temperature, top_p

    def __call__(self, logits: Tensor) -> Tensor:
        logits = logits.float()
        ordered, order = torch.sort(logits, descending=True, dim=-1)
        cumulative = torch.cumsum(torch.softmax(ordered, dim=-1), dim=-1)
        drop = cumulative > self.top_p
        drop[..., 0] = False
        drop = drop.scatter(-1, order, drop)
        probs = torch.softmax(logits.masked_fill(drop, float("-inf")) / max(self.temperature, 1e-5), dim=-1)
        noise = torch.empty(probs.shape, device=probs.device).exponential_(1, generator=self.generator)
        return torch.argmax(probs / noise, dim=-1)


class ARVC(nn.Module):
    """ARVCWrapper: embedding, context_in, style_in, decoder (wait4start / wait4end embeddings, model)."""

    def __init__(self, c: LMConfig | None = None):
        super().__init__()
        c = c or LMConfig()
        self.config = c
        self.embedding = nn.Embedding(c.content_vocab, c.model_dim)
        self.context_in = nn.Linear(c.context_dim, c.model_dim)
        self.style_in = nn.Linear(c.style_dim, c.model_dim)
        self.decoder = nn.Module()
        if c.max_delay > 0:
            self.decoder.wait4start_embedding = nn.Embedding(c.max_delay, c.model_dim)
            self.decoder.wait4end_embedding = nn.Embedding(c.max_delay, c.model_dim)
        self.decoder.model = DualARTransformer(c)

    def speaker_prompt(self, timbre: Tensor, style: Tensor) -> Tensor:
        """timbre latents [B, 32, context_dim], style [B, style_dim] -> [B, 33, D]."""
        return torch.cat([self.context_in(timbre), self.style_in(style)[:, None]], dim=1)

    def waits(self, delay: int, device) -> tuple[Tensor, Tensor]:
        if delay == 0:
            empty = torch.zeros(0, self.config.model_dim, device=device)
            return empty, empty
        return self.decoder.wait4start_embedding.weight[:delay], self.decoder.wait4end_embedding.weight[:delay]

    @staticmethod
    def interleave(first: Tensor, second: Tensor) -> Tensor:
        """[B, T, D] twice -> [B, 2T, D]: first[0], second[0], first[1], ..."""
        b, t, d = first.shape
        return torch.stack([first, second], dim=2).reshape(b, 2 * t, d)

    @torch.no_grad()
    def generate(
        self,
        ref_content: Tensor,
        ref_codes: Tensor,
        src_content: Tensor,
        timbre: Tensor,
        style: Tensor,
        delay: int,
        sampler: Sampler,
        buffer_frames: int = 32,
    ) -> Tensor:
        """Acoustic codes [B, codebooks, T_src] speaking src_content [B, T_src] in the prompt's voice.

        Frame t is drawn after content frames up to t + delay only (the stream's look-ahead).
        """
        c = self.config
        if delay not in c.delay:
            raise ValueError(f"delay {delay} is not one the model was trained with ({c.delay})")
        model = self.decoder.model
        start_wait, end_wait = self.waits(delay, src_content.device)
        b = src_content.shape[0]
        speaker = self.speaker_prompt(timbre, style)
        src = self.embedding(src_content)
        ref = self.embedding(ref_content)
        # every condition in stream order: the source frames, then the end-of-stream waits
        stream = torch.cat([src, end_wait[None].expand(b, -1, -1)], dim=1)
        drawn: list[Tensor] = []

        def prefill(ref_cond: Tensor, ref_audio: Tensor, lookahead: Tensor) -> tuple[int, list[list]]:
            audio = torch.cat([start_wait[None].expand(b, -1, -1), model.embed(ref_audio)], dim=1)
            seq = torch.cat([speaker, self.interleave(torch.cat([ref_cond, lookahead], dim=1), audio)], dim=1)
            caches: list[list] = [[] for _ in model.layers]
            model.slow(seq, 0, caches)
            return seq.shape[1], caches

        # positions a prompt of the reference plus `keep` converted frames takes, with the next step
        room = (c.max_seq_len - speaker.shape[1] - 2 * (ref.shape[1] + delay) - 2) // 2
        if room < 0:
            raise ValueError(
                f"a reference prompt of {ref.shape[1]} frames leaves no room in the model's {c.max_seq_len} "
                "positions; lower max_prompt_frames"
            )
        position, caches = prefill(ref, ref_codes, stream[:, :delay])
        for i in range(src.shape[1]):
            cond = stream[:, i + delay : i + delay + 1]  # frame i is drawn after content frame i + delay
            step = cond if i == 0 else torch.cat([model.embed(drawn[-1][..., None]), cond], dim=1)
            if position + step.shape[1] > c.max_seq_len:
                # Refill: the reference plus the last frames converted so far, with their conditions.
                keep = min(buffer_frames, i, room)
                past_codes = torch.stack(drawn[i - keep :], dim=-1) if keep else ref_codes[..., :0]
                position, caches = prefill(
                    torch.cat([ref, stream[:, i - keep : i]], dim=1),
                    torch.cat([ref_codes, past_codes], dim=-1),
                    stream[:, i : i + delay],
                )
                step = cond
            hidden = model.slow(step, position, caches)
            position += step.shape[1]
            drawn.append(model.draw_frame(hidden[:, -1], sampler))
        return torch.stack(drawn, dim=-1)
