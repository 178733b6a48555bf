"""Batched inference of the ECAPA-TDNN and x-vector networks on packed frames, equal to one at a time.

The frames of a batch of utterances are concatenated along time, [N, channels] with N the sum of their
lengths (frames as rows: matrix products in this layout run 1.3-1.5x faster on one CPU core than in
channels-first order): no padding at all, and every convolution is one matrix product over all of them. Where a layer
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
import torch.nn.functional as F


class Packing:
    """Where each utterance's frames lie in the packed time axis (rows), and per-utterance reductions."""

    def __init__(self, lengths: Sequence[int], device: str | torch.device = "cpu"):
        self.sizes = [int(n) for n in lengths]
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError("a packed batch needs at least one utterance, each of at least one frame")
        self.lengths = torch.as_tensor(self.sizes, dtype=torch.int64, device=device)
        self.batch = len(self.sizes)
        self.total = sum(self.sizes)
        self.offsets = torch.cumsum(self.lengths, 0) - self.lengths
        self.segment = torch.repeat_interleave(torch.arange(self.batch, device=device), self.lengths)
        self.local = torch.arange(self.total, device=device) - self.offsets[self.segment]
        self._taps: dict[tuple[int, int], torch.Tensor] = {}

    def taps(self, kernel: int, dilation: int) -> torch.Tensor:
        """Row indices [N * kernel]: tap j of frame n at n * kernel + j, reflected at its utterance's ends."""
        key = (kernel, dilation)
        if key not in self._taps:
            half = dilation * (kernel - 1) // 2
            steps = torch.arange(kernel, device=self.local.device).unsqueeze(0) * dilation
            positions = self.local.unsqueeze(1) - half + steps  # [N, kernel], frame numbers in the utterance
            lengths = self.lengths[self.segment].unsqueeze(1)
            self._taps[key] = (self.offsets[self.segment].unsqueeze(1) + _reflect(positions, lengths)).reshape(-1)
        return self._taps[key]

    def parts(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Each utterance's rows of [N, C], as views [L, C]."""
        return torch.split(x, self.sizes, dim=0)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """[N, C] -> per-utterance means [B, C] (over contiguous rows, as an unbatched forward sums)."""
        return torch.stack([part.mean(dim=0) for part in self.parts(x)])

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([part.amax(dim=0) for part in self.parts(x)])


def _reflect(positions: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Positions reflected into [0, length) as torch's reflect padding does (periodically beyond it)."""
    period = torch.clamp(2 * (lengths - 1), min=1)
    folded = positions.abs() % period
    folded = torch.where(folded >= lengths, period - folded, folded)
    return torch.where(lengths > 1, folded, torch.zeros_like(folded))


# -- features ---------------------------------------------------------------------------------------


def packed_features(features: torch.nn.Module, waves: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Packing]:
    """vpeval_torch's FbankFeatures of each waveform, packed: frames [N, n_mels] and their Packing.

    speechbrain's Fbank step by step (STFT, power, mel matrix, 10 log10 with its top_db floor), on the
    real frames only and with the floor and the mean normalisation per utterance.
    """
    fbank = features.fbank
    stft, filterbank = fbank.compute_STFT, fbank.compute_fbanks
    if fbank.deltas or fbank.context or not filterbank.freeze or not filterbank.log_mel:
        raise ValueError("packed features follow speechbrain's Fbank without deltas, context or trained filters")
    device = waves[0].device
    lengths = [int(w.numel()) for w in waves]
    padded = torch.zeros(len(waves), max(lengths), dtype=torch.float32, device=device)
    for row, wave in enumerate(waves):
        padded[row, : wave.numel()] = wave
    spectrum = torch.stft(
        padded,
        stft.n_fft,
        stft.hop_length,
        stft.win_length,
        stft.window.to(device),
        stft.center,
        stft.pad_mode,
        stft.normalized_stft,
        stft.onesided,
        return_complex=True,
    )  # [B, freq, T]; zero padding past each end, as unbatched (center, pad_mode "constant")
    # speechbrain's spectral_magnitude (re^2 + im^2), laid out [B, freq, T]: the mel product then runs over
    # contiguous frequency rows (3x faster than squaring the [B, T, freq, 2] view it transposes to)
    power = spectrum.real.square() + spectrum.imag.square()
    packing = Packing([1 + n // stft.hop_length for n in lengths], device)
    columns = filterbank.all_freqs_mat.shape[1]
    matrix = filterbank._create_fbank_matrix(
        filterbank.f_central.repeat(columns, 1).transpose(0, 1), filterbank.band.repeat(columns, 1).transpose(0, 1)
    ).to(device)
    mel = torch.matmul(matrix.t(), power)  # [B, n_mels, T]
    mel = torch.cat([mel[b, :, :n].t() for b, n in enumerate(packing.sizes)])  # real frames, [N, n_mels]
    db = filterbank.multiplier * torch.log10(torch.clamp(mel, min=filterbank.amin))
    db -= filterbank.multiplier * filterbank.db_multiplier
    floors = packing.max(db).amax(dim=1) - filterbank.top_db  # speechbrain's top_db floor, per sentence
    for b, part in enumerate(packing.parts(db)):
        part.clamp_(min=floors[b])
        part.sub_(part.mean(dim=0))  # sentence mean normalisation
    return db, packing


# -- layers -----------------------------------------------------------------------------------------


def _conv(x: torch.Tensor, module: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """A speechbrain Conv1d (padding "same", reflect, stride 1) on packed frames [N, C] -> [N, O]: one product."""
    conv = module.conv
    if conv.stride != (1,) or conv.groups != 1 or module.padding not in ("same", "valid") or conv.padding != (0,):
        raise ValueError("packed inference supports stride-1, ungrouped 'same' convolutions only")
    weight, bias = conv.weight, conv.bias
    kernel, dilation = weight.shape[-1], conv.dilation[0]
    if kernel == 1:
        return F.linear(x, weight[:, :, 0], bias)
    if module.padding != "same" or module.padding_mode != "reflect":
        raise ValueError("packed inference supports reflect-padded 'same' convolutions only")
    # [N * k, C] viewed as [N, k * C]: column j * C + c is tap j of channel c
    columns = x.index_select(0, packing.taps(kernel, dilation)).view(packing.total, kernel * x.shape[1])
    return F.linear(columns, weight.permute(0, 2, 1).reshape(weight.shape[0], -1), bias)


def _linear(values: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A kernel-1 speechbrain Conv1d on per-utterance rows [B, C] (no time axis to pad)."""
    return F.linear(values, module.conv.weight[:, :, 0], module.conv.bias)


def _batch_norm_(x: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A speechbrain BatchNorm1d in eval mode, in place on [N, C]: the affine map of its running statistics."""
    norm = module.norm
    scale = torch.rsqrt(norm.running_var + norm.eps)
    if norm.weight is not None:
        scale = scale * norm.weight
    shift = -norm.running_mean * scale
    if norm.bias is not None:
        shift = shift + norm.bias
    return x.mul_(scale.to(x.dtype)).add_(shift.to(x.dtype))


def _activation_(x: torch.Tensor, activation: torch.nn.Module) -> torch.Tensor:
    """The block's activation, in place where torch has it in place (ReLU, LeakyReLU)."""
    if isinstance(activation, torch.nn.ReLU):
        return x.relu_()
    if isinstance(activation, torch.nn.LeakyReLU):
        return F.leaky_relu_(x, activation.negative_slope)
    return activation(x)


def _tdnn(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's TDNNBlock: conv, activation, batch norm (dropout is off in eval)."""
    return _batch_norm_(_activation_(_conv(x, block.conv, packing), block.activation), block.norm)


def _res2net(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    outputs = []
    for i, chunk in enumerate(torch.chunk(x, block.scale, dim=1)):
        if i == 0:
            y = chunk
        elif i == 1:
            y = _tdnn(chunk, block.blocks[0], packing)
        else:
            y = _tdnn(chunk + y, block.blocks[i - 1], packing)
        outputs.append(y)
    return torch.cat(outputs, dim=1)


def _se_(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's SEBlock in place: each utterance's frames scaled by the gates of its own mean."""
    gates = block.sigmoid(_linear(block.relu(_linear(packing.mean(x), block.conv1)), block.conv2))
    for b, part in enumerate(packing.parts(x)):
        part.mul_(gates[b])
    return x


def _se_res2net(x: torch.Tensor, block: torch.nn.Module, packing: Packing) -> torch.Tensor:
    residual = _conv(x, block.shortcut, packing) if block.shortcut else x
    y = _tdnn(x, block.tdnn1, packing)
    y = _tdnn(_res2net(y, block.res2net_block, packing), block.tdnn2, packing)
    return _se_(y, block.se_block, packing).add_(residual)


def _attentive_pooling(x: torch.Tensor, asp: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's AttentiveStatisticsPooling per utterance: [N, C] -> [B, 2C]."""
    tdnn = asp.tdnn
    channels = x.shape[1]
    parts = packing.parts(x)
    if asp.global_context:
        # each utterance's plain mean and std (speechbrain's weights mask / total: the population variance;
        # two passes: torch.var_mean over rows is 6x slower on one core)
        mean = packing.mean(x)
        std = torch.sqrt(torch.stack([(part - m).square_().mean(dim=0) for part, m in zip(parts, mean)]).clamp(asp.eps))
        # the attention TDNN sees [x; mean; std]: its kernel-1 product splits into a product over the
        # frames and one over each utterance's constant rows, added per utterance (no [N, 3C] copy)
        weight = tdnn.conv.conv.weight[:, :, 0]
        constant = F.linear(mean, weight[:, channels : 2 * channels]) + F.linear(std, weight[:, 2 * channels :])
        if tdnn.conv.conv.bias is not None:
            constant = constant + tdnn.conv.conv.bias
        hidden = F.linear(x, weight[:, :channels].contiguous())  # a strided weight would copy x instead
        for b, part in enumerate(packing.parts(hidden)):
            part.add_(constant[b])
    else:
        hidden = _conv(x, tdnn.conv, packing)
    hidden = _batch_norm_(_activation_(hidden, tdnn.activation), tdnn.norm).tanh_()
    scores = _conv(hidden, asp.conv, packing)
    pooled = []
    for part, score in zip(parts, packing.parts(scores.float())):
        # softmax over this utterance's frames, in place: exp(s - max) / sum
        weights = score.sub_(score.amax(dim=0)).exp_()
        weights = weights.div_(weights.sum(dim=0)).to(x.dtype)
        pooled.append(torch.cat(_weighted_stats(part, weights, asp.eps)))
    return torch.stack(pooled)


def _weighted_stats(x: torch.Tensor, weights: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """speechbrain's _compute_statistics of one utterance [L, C]: sum(w x), sqrt(sum(w (x - mean)^2)) >= eps."""
    mean = (weights * x).sum(dim=0)
    return mean, torch.sqrt((weights * (x - mean).square_()).sum(dim=0).clamp(eps))


def ecapa_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's ECAPA_TDNN forward on packed features [N, n_mels] -> embeddings [B, D]."""
    from speechbrain.lobes.models.ECAPA_TDNN import TDNNBlock

    blocks = list(model.blocks)
    if not isinstance(blocks[0], TDNNBlock) or any(isinstance(b, TDNNBlock) for b in blocks[1:]):
        raise ValueError("packed inference expects speechbrain's ECAPA_TDNN: one TDNN block, then SE-Res2Net blocks")
    x = _tdnn(frames, blocks[0], packing)
    outputs = []
    for block in blocks[1:]:
        x = _se_res2net(x, block, packing)
        outputs.append(x)
    x = _tdnn(torch.cat(outputs, dim=1), model.mfa, packing)  # multi-layer feature aggregation
    pooled = _batch_norm_(_attentive_pooling(x, model.asp, packing), model.asp_bn)
    return _linear(pooled, model.fc)


def xvector_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's Xvector forward on packed features [N, n_mels] -> embeddings [B, D]."""
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
            x = _statistics_pooling(x, layer, packing)  # [B, 2C]
        elif isinstance(layer, Linear):
            x = F.linear(x, layer.w.weight, layer.w.bias)
        else:  # the activation
            x = _activation_(x, layer)
    return x


def _statistics_pooling(x: torch.Tensor, pooling: torch.nn.Module, packing: Packing) -> torch.Tensor:
    """speechbrain's StatisticsPooling per utterance ([N, C] -> [B, 2C]), with the noise it adds to the mean.

    Unbatched, the embedder seeds torch with 0 before each forward, so every utterance's mean gets the
    same noise, drawn for one [1, C] row: the same row is added here to each utterance's mean.
    """
    if not (pooling.return_mean and pooling.return_std):
        raise ValueError("packed inference supports statistics pooling of mean and std")
    parts = packing.parts(x)
    mean = packing.mean(x)
    # torch.std's unbiased estimate in two passes (its single-pass form is several times slower over rows)
    std = torch.stack([(part - m).square_().sum(dim=0) / (part.shape[0] - 1) for part, m in zip(parts, mean)]).sqrt()
    generator = torch.Generator(device=x.device).manual_seed(0)  # what torch.manual_seed(0) gives that device
    noise = torch.randn(1, x.shape[1], generator=generator, device=x.device)
    noise -= torch.min(noise)
    noise /= torch.max(noise)
    noise = pooling.eps * ((1 - 9) * noise + 9)
    return torch.cat([mean + noise.to(x.dtype), std + pooling.eps], dim=1)


PACKED_FORWARD = {"ecapa": ecapa_packed, "xvector": xvector_packed}
