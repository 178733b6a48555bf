"""Batched inference of the ECAPA-TDNN and x-vector networks on packed frames, equal to one at a time.

The frames of a batch of utterances are concatenated along time, [channels, N] with N the sum of their
lengths: no padding at all, and every convolution is one matrix product over all of them. Where a layer
looks across time, it looks within each utterance only:
- each convolution's "same" padding reflects at that utterance's own ends (speechbrain pads each
  unbatched input with F.pad(mode="reflect")), built as one gather of the kernel's taps;
- the SE blocks' means, the attentive statistics pooling (global context, softmax, weighted mean and
  std) and the x-vector statistics pooling are per-utterance segment reductions;
- the log-mel features are computed on the zero-padded waveforms (speechbrain's STFT pads with zeros,
  so a real frame sees the same samples), with the 80 dB floor and the mean normalisation per utterance.

The weights are read from the speechbrain modules themselves, so any trained or loaded network runs
this way. Results equal the per-utterance forward up to float rounding (sums in another order): the
tests bound the cosine distance at 1e-5. On one CPU thread this is several times faster than one
forward per utterance (benchmarks/batching.py), and on a GPU it is a handful of large kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class Packing:
    """Where each utterance's frames lie in the packed time axis, and per-utterance reductions over it."""

    def __init__(self, lengths: Sequence[int], device: str | torch.device = "cpu"):
        lengths = list(lengths)
        self.lengths = torch.as_tensor(lengths, dtype=torch.int64, device=device)
        if self.lengths.numel() == 0 or int(self.lengths.min()) < 1:
            raise ValueError("a packed batch needs at least one utterance, each of at least one frame")
        self.sizes = [int(n) for n in lengths]
        self.batch = len(self.sizes)
        self.total = int(self.lengths.sum())
        self.offsets = torch.cumsum(self.lengths, 0) - self.lengths
        self.segment = torch.repeat_interleave(torch.arange(self.batch, device=device), self.lengths)
        self.local = torch.arange(self.total, device=device) - self.offsets[self.segment]
        self._taps: dict[tuple[int, int], torch.Tensor] = {}

    def taps(self, kernel: int, dilation: int) -> torch.Tensor:
        """Indices [kernel * N] into the packed axis: tap j of output frame n, reflected at its utterance's ends."""
        key = (kernel, dilation)
        if key not in self._taps:
            half = dilation * (kernel - 1) // 2
            steps = torch.arange(kernel, device=self.local.device).unsqueeze(1) * dilation
            positions = self.local.unsqueeze(0) - half + steps  # [kernel, N], local frame numbers
            self._taps[key] = (self.offsets[self.segment] + _reflect(positions, self.lengths[self.segment])).reshape(-1)
        return self._taps[key]

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """[C, N] -> per-utterance sums [C, B] (contiguous slices: the sums of an unbatched forward)."""
        return torch.stack([part.sum(dim=1) for part in torch.split(x, self.sizes, dim=1)], dim=1)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([part.mean(dim=1) for part in torch.split(x, self.sizes, dim=1)], dim=1)

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([part.amax(dim=1) for part in torch.split(x, self.sizes, dim=1)], dim=1)

    def parts(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Each utterance's frames of [C, N], as views [C, L]."""
        return torch.split(x, self.sizes, dim=1)

    def spread(self, values: torch.Tensor) -> torch.Tensor:
        """Per-utterance values [C, B] -> each frame's [C, N]."""
        return values.index_select(1, self.segment)


def _reflect(positions: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Positions reflected into [0, length) as torch's reflect padding does (periodically beyond it)."""
    period = torch.clamp(2 * (lengths - 1), min=1)
    folded = positions.abs() % period
    folded = torch.where(folded >= lengths, period - folded, folded)
    return torch.where(lengths > 1, folded, torch.zeros_like(folded))


# -- features ---------------------------------------------------------------------------------------


def packed_features(features: torch.nn.Module, waves: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Packing]:
    """vpeval_torch's FbankFeatures of each waveform, packed: frames [n_mels, N] and their Packing."""
    fbank = features.fbank
    device = waves[0].device
    lengths = [int(w.numel()) for w in waves]
    padded = torch.zeros(len(waves), max(lengths), dtype=torch.float32, device=device)
    for row, wave in enumerate(waves):
        padded[row, : wave.numel()] = wave
    hop = fbank.compute_STFT.hop_length
    frames = [1 + n // hop for n in lengths]  # torch.stft with center=True
    from speechbrain.processing.features import spectral_magnitude

    filterbank = fbank.compute_fbanks
    log_mel, filterbank.log_mel = filterbank.log_mel, False  # the dB floor is per utterance, below
    try:
        linear = filterbank(spectral_magnitude(fbank.compute_STFT(padded)))
    finally:
        filterbank.log_mel = log_mel
    packing = Packing(frames, device)
    real = torch.arange(linear.shape[1], device=device).unsqueeze(0) < packing.lengths.unsqueeze(1)
    linear = linear[real]  # [N, n_mels], utterance by utterance
    db = filterbank.multiplier * torch.log10(torch.clamp(linear, min=filterbank.amin))
    db = db - filterbank.multiplier * filterbank.db_multiplier
    floor = packing.max(db.amax(dim=1).unsqueeze(0))[0] - filterbank.top_db
    db = torch.maximum(db, floor[packing.segment].unsqueeze(1))
    db = db.t()
    return db - packing.spread(packing.mean(db)), packing


# -- layers -----------------------------------------------------------------------------------------


def _conv(x: torch.Tensor, module: torch.nn.Module, packing: Packing, out: torch.Tensor | None = None) -> torch.Tensor:
    """A speechbrain Conv1d (padding "same", reflect, stride 1) on packed frames [C, N] -> [O, N]: one product.

    `out`: a contiguous [O, N] tensor to write into (a slice of a bigger buffer), else a new one.
    """
    conv = module.conv
    if conv.stride != (1,) or conv.groups != 1 or module.padding not in ("same", "valid") or conv.padding != (0,):
        raise ValueError("packed inference supports stride-1, ungrouped 'same' convolutions only")
    weight, bias = conv.weight, conv.bias
    kernel, dilation = weight.shape[-1], conv.dilation[0]
    if kernel == 1:
        columns = x
    else:
        if module.padding != "same" or module.padding_mode != "reflect":
            raise ValueError("packed inference supports reflect-padded 'same' convolutions only")
        # [C, k*N] viewed as [C*k, N]: row c*k + j is tap j of channel c, the weight's own order
        columns = x.index_select(1, packing.taps(kernel, dilation)).view(x.shape[0], kernel, packing.total)
        columns = columns.reshape(x.shape[0] * kernel, packing.total)
    weight = weight.reshape(weight.shape[0], -1).to(columns.dtype)
    if bias is None:
        return torch.mm(weight, columns, out=out)
    return torch.addmm(bias.unsqueeze(1).to(columns.dtype), weight, columns, out=out)


def _linear_columns(values: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A kernel-1 speechbrain Conv1d on per-utterance columns [C, B] (no time axis to pad)."""
    conv = module.conv
    out = conv.weight[:, :, 0].to(values.dtype) @ values
    return out if conv.bias is None else out + conv.bias.unsqueeze(1).to(values.dtype)


def _batch_norm_(x: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A speechbrain BatchNorm1d in eval mode, in place on [C, N]: the affine map of its running statistics."""
    norm = module.norm
    scale = torch.rsqrt(norm.running_var + norm.eps)
    if norm.weight is not None:
        scale = scale * norm.weight
    shift = -norm.running_mean * scale
    if norm.bias is not None:
        shift = shift + norm.bias
    return x.mul_(scale.unsqueeze(1).to(x.dtype)).add_(shift.unsqueeze(1).to(x.dtype))


def _activation_(x: torch.Tensor, activation: torch.nn.Module) -> torch.Tensor:
    """The block's activation, in place where it is one torch has in place (ReLU, LeakyReLU)."""
    if isinstance(activation, torch.nn.ReLU):
        return x.relu_()
    if isinstance(activation, torch.nn.LeakyReLU):
        return torch.nn.functional.leaky_relu_(x, activation.negative_slope)
    return activation(x)


def _tdnn(x: torch.Tensor, block: torch.nn.Module, packing: Packing, out: torch.Tensor | None = None) -> torch.Tensor:
    """speechbrain's TDNNBlock: conv, activation, batch norm (dropout is off in eval)."""
    return _batch_norm_(_activation_(_conv(x, block.conv, packing, out), block.activation), block.norm)


def _res2net(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's Res2NetBlock, each chunk's output written into its rows of one output tensor."""
    out = torch.empty_like(x)
    chunks = torch.chunk(x, block.scale, dim=0)
    start = 0
    y = None
    for i, chunk in enumerate(chunks):
        rows = out[start : start + chunk.shape[0]]
        start += chunk.shape[0]
        if i == 0:
            rows.copy_(chunk)
            continue
        y = _tdnn(chunk if i == 1 else chunk + y, block.blocks[i - 1], packing, out=rows)
    return out


def _se_(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's SEBlock in place: each utterance's frames scaled by the gates of its own mean."""
    squeeze = block.relu(_linear_columns(packing.mean(x), block.conv1))
    gates = block.sigmoid(_linear_columns(squeeze, block.conv2))
    for b, part in enumerate(packing.parts(x)):
        part.mul_(gates[:, b : b + 1])
    return x


def _se_res2net(x: torch.Tensor, block: torch.nn.Module, packing: Packing, out: torch.Tensor) -> torch.Tensor:
    residual = _conv(x, block.shortcut, packing) if block.shortcut else x
    x = _tdnn(x, block.tdnn1, packing)
    x = _res2net(x, block.res2net_block, packing)
    x = _tdnn(x, block.tdnn2, packing)
    return torch.add(_se_(x, block.se_block, packing), residual, out=out)


def _attentive_pooling(x: torch.Tensor, asp: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's AttentiveStatisticsPooling per utterance: [C, N] -> [2C, B]."""
    tdnn = asp.tdnn
    channels = x.shape[0]
    parts = packing.parts(x)
    if asp.global_context:
        # each utterance's plain mean and std (speechbrain: weights mask / total)
        stats = [_stats(part, None, asp.eps) for part in parts]
        mean = torch.stack([m for m, _ in stats], dim=1)
        std = torch.stack([s for _, s in stats], dim=1)
        # the attention TDNN sees [x; mean; std]: its kernel-1 product splits into a product over the
        # frames and one over each utterance's constant columns, added per utterance (no [3C, N] copy)
        conv = tdnn.conv.conv
        weight = conv.weight[:, :, 0].to(x.dtype)
        constant = weight[:, channels : 2 * channels] @ mean + weight[:, 2 * channels :] @ std
        if conv.bias is not None:
            constant = constant + conv.bias.unsqueeze(1).to(x.dtype)
        hidden = weight[:, :channels] @ x
        for b, part in enumerate(packing.parts(hidden)):
            part.add_(constant[:, b : b + 1])
    else:
        hidden = _conv(x, tdnn.conv, packing)
    hidden = _batch_norm_(_activation_(hidden, tdnn.activation), tdnn.norm).tanh_()
    scores = _conv(hidden, asp.conv, packing)
    pooled = []
    for part, score in zip(parts, packing.parts(scores)):
        weights = torch.softmax(score.float(), dim=1).to(x.dtype)  # over this utterance's frames
        pooled.append(torch.cat(_stats(part, weights, asp.eps)))
    return torch.stack(pooled, dim=1)


def _stats(x: torch.Tensor, weights: torch.Tensor | None, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """speechbrain's _compute_statistics of one utterance [C, L]: sum(w x), sqrt(sum(w (x - mean)^2)) >= eps.

    weights None: the plain mean, speechbrain's mask / total.
    """
    if weights is None:
        weights = torch.full((1, x.shape[1]), 1.0 / x.shape[1], dtype=x.dtype, device=x.device)
    mean = (weights * x).sum(dim=1)
    centred = x - mean.unsqueeze(1)
    return mean, torch.sqrt((weights * centred.square_()).sum(dim=1).clamp(eps))


def ecapa_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's ECAPA_TDNN forward on packed features [n_mels, N] -> embeddings [B, D]."""
    from speechbrain.lobes.models.ECAPA_TDNN import TDNNBlock

    blocks = list(model.blocks)
    if not isinstance(blocks[0], TDNNBlock) or any(isinstance(b, TDNNBlock) for b in blocks[1:]):
        raise ValueError("packed inference expects speechbrain's ECAPA_TDNN: one TDNN block, then SE-Res2Net blocks")
    x = _tdnn(frames, blocks[0], packing)
    # the SE-Res2Net blocks write their outputs into the rows of the multi-layer aggregation's input
    widths = [block.out_channels for block in blocks[1:]]
    aggregated = torch.empty(sum(widths), packing.total, dtype=x.dtype, device=x.device)
    start = 0
    for block, width in zip(blocks[1:], widths):
        x = _se_res2net(x, block, packing, out=aggregated[start : start + width])
        start += width
    x = _tdnn(aggregated, model.mfa, packing)
    pooled = _batch_norm_(_attentive_pooling(x, model.asp, packing), model.asp_bn)
    return _linear_columns(pooled, model.fc).t()


def xvector_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's Xvector forward on packed features [n_mels, N] -> embeddings [B, D]."""
    from speechbrain.nnet.CNN import Conv1d
    from speechbrain.nnet.linear import Linear
    from speechbrain.nnet.normalization import BatchNorm1d
    from speechbrain.nnet.pooling import StatisticsPooling

    x = frames
    for layer in model.blocks:
        if isinstance(layer, Conv1d):
            x = _conv(x, layer, packing)
        elif isinstance(layer, BatchNorm1d):
            x = _batch_norm_(x, layer)
        elif isinstance(layer, StatisticsPooling):
            x = _statistics_pooling(x, layer, packing).t()  # [B, 2C]
        elif isinstance(layer, Linear):
            x = torch.nn.functional.linear(x, layer.w.weight.to(x.dtype), _cast(layer.w.bias, x.dtype))
        else:  # the activation
            x = _activation_(x, layer)
    return x


def _statistics_pooling(x: torch.Tensor, pooling: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's StatisticsPooling per utterance ([C, N] -> [2C, B]), with the noise it adds to the mean.

    Unbatched, the embedder seeds torch with 0 before each forward, so every utterance's mean gets the
    same noise, drawn for one [1, C] row: the same row is added here to each utterance's mean.
    """
    if not (pooling.return_mean and pooling.return_std):
        raise ValueError("packed inference supports statistics pooling of mean and std")
    mean = packing.mean(x)
    centred = (x - packing.spread(mean)).pow(2)
    std = torch.sqrt(packing.sum(centred) / (packing.lengths - 1).to(x.dtype))  # torch.std: unbiased
    generator = torch.Generator(device=x.device).manual_seed(0)  # what torch.manual_seed(0) gives that device
    noise = torch.randn(1, x.shape[0], generator=generator, device=x.device)
    noise -= torch.min(noise)
    noise /= torch.max(noise)
    noise = pooling.eps * ((1 - 9) * noise + 9)
    mean = mean + noise.t().to(x.dtype)
    return torch.cat([mean, std + pooling.eps], dim=0)


def _cast(tensor: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    return None if tensor is None else tensor.to(dtype)


PACKED_FORWARD = {"ecapa": ecapa_packed, "xvector": xvector_packed}
