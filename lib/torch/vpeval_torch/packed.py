"""Batched inference of the ECAPA-TDNN and x-vector networks on packed frames, equal to one at a time.

The frames of a batch of utterances are concatenated along time, [N, channels] with N the sum of their
lengths (frames as rows: matrix products in this layout ran 1.3-1.5x faster on one AMD EPYC core than
in channels-first order, and as fast on an Intel Xeon's): no padding at all, and every convolution is
one matrix product over all of them. Where a layer looks across time, it looks within each utterance only:
- each convolution's "same" padding reflects at that utterance's own ends (speechbrain pads each
  unbatched input with F.pad(mode="reflect")), built as one gather of the kernel's taps;
- the SE blocks' means, the attentive statistics pooling (global context, softmax, weighted mean and
  std) and the x-vector statistics pooling are per-utterance reductions;
- the log-mel features are cut from each utterance's own zero-padded frames (speechbrain's STFT pads
  with zeros, so a real frame sees the same samples), with the 80 dB floor and the mean normalisation
  per utterance.

The weights are read from the speechbrain modules themselves, so any trained or loaded network runs
this way; PackedEcapa lays them out once per embedding call (batch norms folded into the products or
as one multiply-add, biases carried past the Res2Net into tdnn2's, the MFA's norm folded into the
pooling, tanh as a sigmoid, the softmax in base 2) for all its batches. Results equal the
per-utterance forward up to float rounding (sums in another order): the tests bound the cosine
distance at 1e-5 (measured ~1e-13). On one CPU thread this is about 3x faster than one forward per
utterance (benchmarks/batching.py, BENCHMARKS.md: the matrix products at MKL's peak are about half of
the batched time, the rest passes over the frames), and on a GPU it is a handful of large kernels.
"""

from __future__ import annotations

import weakref
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
        self._taps: dict[tuple[int, int], torch.Tensor] = {}

    def taps(self, kernel: int, dilation: int) -> torch.Tensor:
        """Row indices [N * kernel]: tap j of frame n at n * kernel + j, reflected at its utterance's ends."""
        key = (kernel, dilation)
        if key not in self._taps:
            device = self.lengths.device
            half = dilation * (kernel - 1) // 2
            steps = torch.arange(kernel, device=device) * dilation - half
            rows = torch.arange(self.total, device=device).unsqueeze(1) + steps  # [N, kernel]: inside the utterance
            # only frames within `half` of an end reach past it (a few per utterance): reflect those,
            # listed from the sizes (no pass over all N frames to find them)
            edge, starts, sizes = [], [], []
            start = 0
            for size in self.sizes:
                near = sorted(set(range(min(half, size))) | set(range(max(size - half, 0), size)))
                edge += [start + i for i in near]
                starts += [start] * len(near)
                sizes += [size] * len(near)
                start += size
            if edge:
                edge_rows, first = (torch.tensor(v, dtype=torch.int64, device=device) for v in (edge, starts))
                lengths = torch.tensor(sizes, dtype=torch.int64, device=device).unsqueeze(1)
                reflected = _reflect((edge_rows - first).unsqueeze(1) + steps, lengths)
                rows[edge_rows] = first.unsqueeze(1) + reflected
            self._taps[key] = rows.reshape(-1)
        return self._taps[key]

    def lengths_as(self, x: torch.Tensor) -> torch.Tensor:
        """The utterance lengths [B, 1] in x's dtype, to divide per-utterance sums by."""
        return self.lengths.to(x.dtype).unsqueeze(1)

    def parts(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Each utterance's rows of [N, C], as views [L, C]."""
        return torch.split(x, self.sizes, dim=0)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """[N, C] -> per-utterance means [B, C] (over contiguous rows, as an unbatched forward sums)."""
        return torch.stack([part.mean(dim=0) for part in self.parts(x)])


def _reflect(positions: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Positions reflected into [0, length) as torch's reflect padding does (periodically beyond it)."""
    period = torch.clamp(2 * (lengths - 1), min=1)
    folded = positions.abs() % period
    folded = torch.where(folded >= lengths, period - folded, folded)
    return torch.where(lengths > 1, folded, torch.zeros_like(folded))


# -- features ---------------------------------------------------------------------------------------


def packed_features(
    features: torch.nn.Module, waves: Sequence[torch.Tensor], mean_norm: bool = True
) -> tuple[torch.Tensor, Packing]:
    """vpeval_torch's FbankFeatures of each waveform, packed: frames [N, n_mels] and their Packing.

    `features` is an FbankFeatures or a speechbrain Fbank itself; with `mean_norm` each utterance's
    frames lose their mean (FbankFeatures' normalisation, speechbrain's InputNormalization "sentence"
    without std_norm, as a released folder's mean_var_norm is), else the log-mels come out as Fbank gives them.

    speechbrain's Fbank step by step (STFT, power, mel matrix, 10 log10 with its top_db floor), on the
    real frames only and with the floor and the mean normalisation per utterance. torch.stft's frames
    are cut here, as it cuts them (zeros past each end, "center" with pad mode "constant"), but only an
    utterance's own frames are transformed: no FFT, power or mel product of a shorter one's padding, and
    the frames come out as rows, the layout every later product wants.
    """
    fbank = check_fbank(features)
    stft, filterbank = fbank.compute_STFT, fbank.compute_fbanks
    device = waves[0].device
    hop, n_fft = stft.hop_length, stft.n_fft
    packing = Packing([1 + int(w.numel()) // hop for w in waves], device)
    # torch.stft with center=True: n_fft // 2 zeros before, every frame of the longest inside the row
    padded = torch.empty(len(waves), (max(packing.sizes) - 1) * hop + n_fft, dtype=torch.float32, device=device)
    for row, wave in zip(padded, waves):  # zeros around each wave only (no pass over the whole buffer)
        row[: n_fft // 2].zero_()
        row[n_fft // 2 : n_fft // 2 + wave.numel()] = wave
        row[n_fft // 2 + wave.numel() :].zero_()
    window = stft.window.to(device)
    if window.numel() < n_fft:  # torch.stft centres a shorter window in the frame
        left = (n_fft - window.numel()) // 2
        window = F.pad(window, (left, n_fft - window.numel() - left))
    framed = padded.unfold(1, n_fft, hop)  # [B, T, n_fft], views
    frames = torch.empty(packing.total, n_fft, dtype=torch.float32, device=device)  # [N, n_fft], windowed
    for view, part in zip(framed, packing.parts(frames)):
        torch.mul(view[: len(part)], window, out=part)
    spectrum = torch.view_as_real(torch.fft.rfft(frames))  # [N, freq, 2]
    # the power re^2 + im^2 summed by the mel product itself: squares in place, each triangle's weight
    # repeated for a bin's two parts (one contiguous pass instead of two over strided halves)
    squares = spectrum.view(packing.total, -1).square_()  # [N, 2 freq]
    db = _mel_product(filterbank, device)(squares)  # [N, n_mels]
    db.clamp_(min=filterbank.amin).log10_().mul_(filterbank.multiplier)
    if filterbank.db_multiplier:
        db -= filterbank.multiplier * filterbank.db_multiplier
    # speechbrain's top_db floor per sentence, then the sentence mean normalisation, on each utterance's
    # rows while they are in cache (gathering [N, n_mels] floors and means was two more passes)
    for part in packing.parts(db):
        torch.maximum(part, part.max() - filterbank.top_db, out=part)
        if mean_norm:
            part.sub_(part.mean(dim=0))
    return db, packing


def check_fbank(features: torch.nn.Module) -> torch.nn.Module:
    """The speechbrain Fbank of `features` (itself or an FbankFeatures' own); ValueError where
    packed_features does not follow it."""
    fbank = getattr(features, "fbank", features)
    stft, filterbank = fbank.compute_STFT, fbank.compute_fbanks
    if fbank.deltas or fbank.context or not filterbank.freeze or not filterbank.log_mel:
        raise ValueError("packed features follow speechbrain's Fbank without deltas, context or trained filters")
    if not stft.center or stft.pad_mode != "constant" or stft.normalized_stft or not stft.onesided:
        raise ValueError("packed features follow speechbrain's STFT: centred, zero padded, one-sided, unnormalised")
    return fbank


_MEL_PRODUCTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # filterbank -> {device: product}


def _mel_product(filterbank: torch.nn.Module, device: torch.device) -> _BandedProduct:
    """The frozen filterbank's mel product of squared spectra, laid out once per filterbank and device."""
    products = _MEL_PRODUCTS.setdefault(filterbank, {})
    if device not in products:
        columns = filterbank.all_freqs_mat.shape[1]
        central = filterbank.f_central.repeat(columns, 1).transpose(0, 1)
        matrix = filterbank._create_fbank_matrix(central, filterbank.band.repeat(columns, 1).transpose(0, 1))
        products[device] = _BandedProduct(matrix.t().repeat_interleave(2, dim=1).to(device))
    return products[device]


class _BandedProduct:
    """x [N, K] @ weight [O, K].T for a weight whose rows are nonzero on short runs of columns (the mel
    triangles: 2.4 % of the entries): a product per group of rows over the columns they use only, 1.4x
    faster than the dense product at 80 mels (the skipped terms are exact zeros). Each group's weights
    are laid out once, [columns, rows] as torch.mm reads them fastest."""

    def __init__(self, weight: torch.Tensor, groups: int = 4):
        nonzero = weight != 0
        bounds = [round(i * weight.shape[0] / groups) for i in range(groups + 1)]
        self.groups: list[tuple[int, int, int, torch.Tensor | None]] = []  # (rows, first column, end, weight)
        for first, last in zip(bounds, bounds[1:]):
            used = torch.nonzero(nonzero[first:last].any(dim=0)).squeeze(1)
            if used.numel() == 0:
                self.groups.append((last - first, 0, 0, None))
                continue
            lo, hi = int(used[0]), int(used[-1]) + 1
            self.groups.append((last - first, lo, hi, weight[first:last, lo:hi].t().contiguous()))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        outs = [
            x.new_zeros(x.shape[0], rows) if part is None else torch.mm(x[:, lo:hi], part.to(x.dtype))
            for rows, lo, hi, part in self.groups
        ]
        return torch.cat(outs, dim=1)


# -- layers -----------------------------------------------------------------------------------------


def _product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, relu: bool = False):
    """x [N, K] @ weight [O, K].T + bias, ReLU'd if asked: MKL's product (a column slice is read in place).

    oneDNN's fused product + ReLU measured 2-3 % faster on this benchmark's repeated batches only: it
    builds a kernel for every new row count (1.2 ms a call here), so on fresh batch shapes, as a real
    corpus gives, it was no faster than this. (The bias and ReLU passes cost little next to the product:
    a product without bias plus aten's fused add-ReLU was no faster either.)
    """
    y = F.linear(x, weight, bias)
    return y.relu_() if relu else y


def _conv(x: torch.Tensor, module: torch.nn.Module, packing: Packing, relu: bool = False) -> torch.Tensor:
    """A speechbrain Conv1d (padding "same", reflect, stride 1) on packed frames [N, C] -> [N, O]: one product."""
    conv = module.conv
    if conv.stride != (1,) or conv.groups != 1 or module.padding not in ("same", "valid") or conv.padding != (0,):
        raise ValueError("packed inference supports stride-1, ungrouped 'same' convolutions only")
    weight, bias = conv.weight, conv.bias
    kernel, dilation = weight.shape[-1], conv.dilation[0]
    if kernel == 1:
        return _product(x, weight[:, :, 0], bias, relu)
    if module.padding != "same" or module.padding_mode != "reflect":
        raise ValueError("packed inference supports reflect-padded 'same' convolutions only")
    # [N * k, C] viewed as [N, k * C]: column j * C + c is tap j of channel c (one gather measured faster
    # than k shifted products of the same frames: those have k times fewer columns each)
    columns = x.index_select(0, packing.taps(kernel, dilation)).view(packing.total, kernel * x.shape[1])
    return _product(columns, weight.permute(0, 2, 1).reshape(weight.shape[0], -1), bias, relu)


def _linear(values: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A kernel-1 speechbrain Conv1d on per-utterance rows [B, C] (no time axis to pad)."""
    return F.linear(values, module.conv.weight[:, :, 0], module.conv.bias)


def _affine(module: torch.nn.Module, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A speechbrain BatchNorm1d in eval mode as (scale, shift): x * scale + shift per channel."""
    norm = module.norm
    scale = torch.rsqrt(norm.running_var + norm.eps)
    if norm.weight is not None:
        scale = scale * norm.weight
    shift = -norm.running_mean * scale
    if norm.bias is not None:
        shift = shift + norm.bias
    return scale.to(dtype), shift.to(dtype)


def _batch_norm_(x: torch.Tensor, module: torch.nn.Module) -> torch.Tensor:
    """A speechbrain BatchNorm1d in eval mode, in place on [N, C]: one fused multiply-add pass."""
    scale, shift = _affine(module, x.dtype)
    return torch.addcmul(shift, x, scale, out=x)


def _activation_(x: torch.Tensor, activation: torch.nn.Module) -> torch.Tensor:
    """The block's activation, in place where torch has it in place (ReLU, LeakyReLU)."""
    if isinstance(activation, torch.nn.ReLU):
        return x.relu_()
    if isinstance(activation, torch.nn.LeakyReLU):
        return F.leaky_relu_(x, activation.negative_slope)
    return activation(x)


class _Tdnn:
    """A speechbrain TDNNBlock (conv, activation, batch norm; dropout is off in eval) with its weights
    laid out for the packed product once, for every batch of a call."""

    def __init__(self, block: torch.nn.Module):
        module, conv = block.conv, block.conv.conv
        if conv.stride != (1,) or conv.groups != 1 or module.padding not in ("same", "valid") or conv.padding != (0,):
            raise ValueError("packed inference supports stride-1, ungrouped 'same' convolutions only")
        self.kernel, self.dilation = conv.weight.shape[-1], conv.dilation[0]
        if self.kernel > 1 and (module.padding != "same" or module.padding_mode != "reflect"):
            raise ValueError("packed inference supports reflect-padded 'same' convolutions only")
        # [O, k * C]: column j * C + c is tap j of channel c, the order of the gathered columns
        self.weight = conv.weight.permute(0, 2, 1).reshape(conv.weight.shape[0], -1).contiguous()
        self.bias = conv.bias
        self.activation = block.activation
        self.relu = isinstance(block.activation, torch.nn.ReLU)  # then in place after the product
        self.scale, self.shift = _affine(block.norm, conv.weight.dtype)
        if self.relu:
            # the batch norm after the ReLU folded into the product: s relu(h) + t is max(s h + t, t) where
            # s >= 0 and min(s h + t, t) where s < 0, and s h + t is the product with weights s W and bias
            # s b + t: one clamp pass after the product instead of a ReLU and a multiply-add
            scale, shift = self.scale, self.shift
            self.folded = (self.weight * scale.unsqueeze(1)).contiguous()
            self.folded_t = self.folded.t().contiguous()  # [k C, O]: torch.mm's layout, 2-9 % faster than F.linear's
            self.folded_bias = shift + (scale * self.bias if self.bias is not None else 0)
            self.clamp = _relu_norm_bounds(scale, shift)

    def columns(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        """[N, C] -> the product's input [N, k * C]: each frame's taps side by side."""
        if self.kernel == 1:
            return x
        return x.index_select(0, packing.taps(self.kernel, self.dilation)).view(packing.total, -1)

    def input_offset(self, offset: torch.Tensor) -> torch.Tensor:
        """What a constant `offset` [C] on every input frame adds to the product [O] (a reflected constant
        is that constant: every tap sees it)."""
        return self.folded @ offset.repeat(self.kernel)

    def clamp_bounds(self, carried: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(low, high) of the clamp after the product, high None where nothing is bounded above; with
        `carried` [O], for the product without that bias: clamp(h + b, lo, hi) - b."""
        low, high = self.clamp
        if carried is None:
            return low, high
        return low - carried, (None if high is None else high - carried)

    def __call__(self, x: torch.Tensor, packing: Packing, out: torch.Tensor | None = None) -> torch.Tensor:
        """[N, C] -> [N, O], written into `out` (a column slice is fine) if given."""
        x = self.columns(x, packing)
        if self.relu:
            y = torch.addmm(self.folded_bias.to(x.dtype), x, self.folded_t.to(x.dtype))
            return _clamp_(y, *self.clamp, out=out)
        y = _activation_(_product(x, self.weight, self.bias), self.activation)
        scale, shift = (
            (self.scale, self.shift)
            if y.dtype == self.scale.dtype
            else (self.scale.to(y.dtype), self.shift.to(y.dtype))
        )
        return torch.addcmul(shift, y, scale, out=y if out is None else out)


class _SERes2Net:
    """speechbrain's SERes2NetBlock: TDNN, Res2Net, TDNN, squeeze-excitation, plus the residual."""

    def __init__(self, block: torch.nn.Module):
        self.shortcut = _Conv(block.shortcut) if block.shortcut else None
        self.tdnn1, self.tdnn2 = _Tdnn(block.tdnn1), _Tdnn(block.tdnn2)
        self.scale = block.res2net_block.scale
        self.chunks = [_Tdnn(b) for b in block.res2net_block.blocks]
        self.se = block.se_block
        self.width = block.tdnn2.conv.conv.weight.shape[0]
        self.carried = self.tdnn1.relu and self.tdnn2.relu and all(c.relu for c in self.chunks)
        if self.carried:
            self._carry_biases()

    def _carry_biases(self) -> None:
        """Leave the biases of tdnn1 and of the Res2Net chunks out of their products and carry them
        forward as constants: a bias-free product needs no pass to write the bias first (addmm copies it
        into the output before MKL adds the product), its clamp takes bounds lowered by the bias, and
        every consumer is linear, so a constant on its input becomes a constant on its output (chunk i's
        input carries tdnn1's bias for chunk i plus chunk i-1's carried constant), until tdnn2's product
        takes them all into its own bias. Same sums, another order: within float rounding."""
        tdnn1, width = self.tdnn1, self.tdnn1.folded.shape[0] // self.scale
        offsets = list(tdnn1.folded_bias.split(width))  # what each stored column block lacks
        self.tdnn1_bounds = tdnn1.clamp_bounds(tdnn1.folded_bias)
        self.chunk_steps = []
        previous = None
        for i, chunk in enumerate(self.chunks, start=1):
            lacking = offsets[i] if previous is None else offsets[i] + previous
            carried = chunk.folded_bias + chunk.input_offset(lacking)
            self.chunk_steps.append((chunk, chunk.clamp_bounds(carried)))
            offsets[i] = previous = carried
        self.tdnn2_bias = self.tdnn2.folded_bias + self.tdnn2.input_offset(torch.cat(offsets))

    def __call__(self, x: torch.Tensor, packing: Packing, out: torch.Tensor) -> torch.Tensor:
        """[N, C] -> `out` [N, O] (may be a column slice of a wider tensor)."""
        residual = self.shortcut(x, packing) if self.shortcut else x
        if self.carried:
            y = self._res2net_carried(x, packing)
        else:
            y = self._res2net(x, packing)
        # the SE gates of each utterance's own mean, and the residual, in one multiply-add per utterance
        se = self.se
        gates = se.sigmoid(_linear(se.relu(_linear(packing.mean(y), se.conv1)), se.conv2))
        for gate, part, rest, target in zip(gates, packing.parts(y), packing.parts(residual), packing.parts(out)):
            torch.addcmul(rest, part, gate, out=target)
        return out

    def _res2net_carried(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        """tdnn1, Res2Net and tdnn2 with the biases carried (see _carry_biases): tdnn2's output [N, O]."""
        low, high = self.tdnn1_bounds
        y = _clamp_(torch.mm(self.tdnn1.columns(x, packing), self.tdnn1.folded_t.to(x.dtype)), low, high)
        chunks = torch.chunk(y, self.scale, dim=1)
        for i, (chunk, (low, high)) in enumerate(self.chunk_steps, start=1):
            source = chunks[1] if i == 1 else torch.add(chunks[i], chunks[i - 1])
            product = torch.mm(chunk.columns(source, packing), chunk.folded_t.to(source.dtype))
            _clamp_(product, low, high, out=chunks[i])
        tdnn2 = self.tdnn2
        z = torch.addmm(self.tdnn2_bias.to(y.dtype), tdnn2.columns(y, packing), tdnn2.folded_t.to(y.dtype))
        return _clamp_(z, *tdnn2.clamp_bounds())

    def _res2net(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        """tdnn1, Res2Net and tdnn2 as speechbrain orders them, for blocks with other activations."""
        y = self.tdnn1(x, packing)
        # Res2Net in place: chunk i's TDNN sees chunk i plus chunk i-1's output, which takes chunk i-1's
        # columns once they are read (chunk 0 passes through as it is)
        chunks = torch.chunk(y, self.scale, dim=1)
        for i, tdnn in enumerate(self.chunks, start=1):
            tdnn(chunks[1] if i == 1 else torch.add(chunks[i], chunks[i - 1]), packing, out=chunks[i])
        return self.tdnn2(y, packing)


def _relu_norm_bounds(scale: torch.Tensor, shift: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The clamp of s h + t that a batch norm after a ReLU is, s relu(h) + t: from below at t where s >= 0,
    from above at t where s < 0; high None where no scale is negative (then a plain maximum)."""
    negative = scale < 0
    if not bool(negative.any()):
        return shift, None
    infinite = torch.full_like(shift, float("inf"))
    return torch.where(negative, -infinite, shift), torch.where(negative, shift, infinite)


def _clamp_(y: torch.Tensor, low: torch.Tensor, high: torch.Tensor | None, out: torch.Tensor | None = None):
    """clamp(y, low, high) per channel into `out` (default: in place); a plain maximum for high None
    (all the batch norm scales after a ReLU positive: the usual case)."""
    target = y if out is None else out
    if high is None:
        return torch.maximum(y, low.to(y.dtype), out=target)
    return torch.clamp(y, low.to(y.dtype), high.to(y.dtype), out=target)


class _Conv:
    """A bare speechbrain Conv1d (the SE-Res2Net shortcut), prepared as _Tdnn's convolution."""

    def __init__(self, module: torch.nn.Module):
        conv = module.conv
        if conv.weight.shape[-1] != 1:
            raise ValueError("packed inference expects kernel-1 shortcut convolutions")
        self.weight, self.bias = conv.weight[:, :, 0].contiguous(), conv.bias

    def __call__(self, x: torch.Tensor, packing: Packing) -> torch.Tensor:
        return _product(x, self.weight, self.bias)


_LOG2_E = 1.4426950408889634


class _AttentivePooling:
    """speechbrain's AttentiveStatisticsPooling per utterance ([N, C] -> [B, 2C]) on the MFA's activation
    before its batch norm, received centred: r - c with c that norm's running mean (see PackedEcapa). The
    norm's per-channel affine map (scale s, shift t) is folded into the products that read the frames and
    into the pooled statistics (mean s m + t + s c, std |s| sd), which saves a pass over the widest tensor
    of the network; tanh is computed as 2 sigmoid(2 h) - 1 (torch's CPU tanh is 3-4x slower than its
    sigmoid), the doubling in the attention norm (folded into the attention's product after a ReLU)
    and the "2 s" in the score convolution's weights.

    The global context's plain variances are E[x^2] - E[x]^2 of the centred frames, two passes fewer
    over them than E[(x - m)^2]: centred on the running mean, a channel's utterance mean and its spread
    are of one order in a trained network, so the subtraction loses a few float roundings, and that
    context only shifts the attention's scores. The weighted statistics, which are the embedding, keep
    two passes (_weighted_moments). The sums are taken in fp32 under autocast too."""

    def __init__(self, asp: torch.nn.Module, mfa_norm: torch.nn.Module, dtype: torch.dtype, centre: torch.Tensor):
        tdnn = asp.tdnn
        self.eps, self.global_context = asp.eps, asp.global_context
        self.scale, shift = _affine(mfa_norm, dtype)  # of the MFA, applied to what comes in
        self.shift = shift + self.scale * centre  # s (r - c) + (t + s c) = s r + t
        conv = tdnn.conv.conv
        if conv.weight.shape[-1] != 1 or asp.conv.conv.weight.shape[-1] != 1:
            raise ValueError("packed inference expects the attention's kernel-1 convolutions")
        weight = conv.weight[:, :, 0]
        channels = self.scale.numel()
        frames = weight[:, :channels]
        self.frames = (frames * self.scale).contiguous()  # W (s r + t) = (W s) r + W t
        self.bias = frames @ self.shift + (conv.bias if conv.bias is not None else 0)
        self.context = (weight[:, channels : 2 * channels], weight[:, 2 * channels :]) if self.global_context else None
        self.activation = tdnn.activation
        scale, shift = _affine(tdnn.norm, dtype)
        self.norm = (2 * scale, 2 * shift)
        self.relu = isinstance(tdnn.activation, torch.nn.ReLU)
        if self.relu:
            # as _Tdnn folds its norm: 2 s relu(h) + 2 t is a clamp of the product with weights 2 s W and
            # constant 2 s c + 2 t at 2 t (from below where s >= 0, from above where s < 0): one pass
            # instead of a ReLU and a multiply-add
            self.frames = self.frames * self.norm[0].unsqueeze(1)
            self.hidden_bounds = _relu_norm_bounds(*self.norm)
        # scores in base 2 (times log2 e): torch's exp2 is 1.6x faster than its exp, the softmax the same.
        # The score bias (and the "- 1" of the tanh) is a constant per channel, which a softmax over time
        # cancels exactly: no bias at all. The sigmoid lies in (0, 1), so each channel's scores lie between
        # the sums of its negative and of its positive weights: where those stay within +-100, exp2 of the
        # raw scores is finite and nonzero (and a sum of 2^17 frames of it too), and no utterance maximum
        # needs subtracting first.
        self.score = (2 * _LOG2_E * asp.conv.conv.weight[:, :, 0]).contiguous()
        self.frames_t, self.score_t = self.frames.t().contiguous(), self.score.t().contiguous()  # torch.mm's layout
        low, high = self.score.clamp(max=0).sum(dim=1), self.score.clamp(min=0).sum(dim=1)
        self.bounded = bool((low > -100).all() and (high < 100).all())

    def __call__(self, r: torch.Tensor, packing: Packing) -> torch.Tensor:
        scratch = torch.empty(max(packing.sizes), r.shape[1], dtype=torch.float32, device=r.device)  # one utterance
        hidden = torch.mm(r, self.frames_t.to(r.dtype))  # its bias goes in with each utterance's constant below
        constant = self.bias.unsqueeze(0).expand(packing.batch, -1)
        if self.global_context:
            # each utterance's plain mean and std (speechbrain's weights mask / total: the population
            # variance) of s r + t: the attention TDNN sees [x; mean; std], so its kernel-1 product splits
            # into the product over the frames and one over each utterance's constant rows
            mean, variance = _moments(r, packing, scratch)
            mean = mean * self.scale + self.shift
            std = torch.sqrt((variance * self.scale.square()).clamp(self.eps))
            constant = F.linear(mean, self.context[0]) + F.linear(std, self.context[1]) + self.bias
        if self.relu:  # the norm folded in (see __init__)
            constant = constant * self.norm[0] + self.norm[1]
        for part, c in zip(packing.parts(hidden), constant):
            part.add_(c)
        if self.relu:
            _clamp_(hidden, *self.hidden_bounds).sigmoid_()
        else:
            hidden = _activation_(hidden, self.activation)
            torch.addcmul(self.norm[1], hidden, self.norm[0], out=hidden).sigmoid_()
        mean, variance = _weighted_moments(r, hidden, self.score_t, packing, scratch, shifted=self.bounded)
        mean = mean * self.scale + self.shift
        return torch.cat([mean, torch.sqrt((variance * self.scale.square()).clamp(self.eps))], dim=1)


def _moments(x: torch.Tensor, packing: Packing, scratch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each utterance's mean and population variance [B, C] of x [N, C], as E[x^2] - E[x]^2 in fp32;
    `scratch` [longest, C] (fp32) holds one utterance's squares."""
    means, squares = [], []
    for part in packing.parts(x):
        part = part.float()
        means.append(part.sum(dim=0))
        squares.append(torch.mul(part, part, out=scratch[: len(part)]).sum(dim=0))
    lengths = packing.lengths_as(means[0])
    mean = torch.stack(means) / lengths
    return mean, (torch.stack(squares) / lengths - mean.square()).clamp_(min=0)


def _weighted_moments(
    x: torch.Tensor, hidden: torch.Tensor, score_t: torch.Tensor, packing: Packing, scratch: torch.Tensor, shifted: bool
):
    """speechbrain's softmax over each utterance's frames of x [N, C] and its _compute_statistics before
    the square root: weighted means sum(w x) and variances sum(w (x - mean)^2) [B, C] in fp32, w = 2^(s -
    max) / total for the scores s = hidden @ score_t in base 2 (the division applied to the sums). With
    `shifted`, the scores are already below a bound that keeps exp2 finite: no maximum to subtract.
    `scratch` [longest, C] (fp32) holds one utterance's rows.

    One utterance at a time from the score product on: its [L, C] scores stay in the core's cache
    through the exp2 and the sums, where a whole batch's went out to memory and back (2.5 % of a CPU
    embedding call, benchmarks/batching.py).

    Two passes here, unlike the plain moments: the attention may weight a few frames, whose spread is
    then far below their mean's distance from any centre, and E[w x^2] - E[w x]^2 moved such
    embeddings by 2e-5 of their size (the two passes: 3e-7)."""
    score_rows = torch.empty_like(scratch)
    in_place = hidden.dtype == scratch.dtype and not torch.is_autocast_enabled(hidden.device.type)
    means, variances = [], []
    for part, h in zip(packing.parts(x), packing.parts(hidden)):
        part, rows = part.float(), scratch[: len(part)]
        if in_place:
            w = torch.mm(h, score_t, out=score_rows[: len(part)])
        else:  # the softmax in fp32 under autocast too
            w = torch.mm(h, score_t.to(h.dtype)).float()
        if not shifted:
            w.sub_(w.amax(dim=0))
        total = w.exp2_().sum(dim=0)
        # products into the scratch rows, then sums: torch's vecdot makes a new tensor of the products
        # each time (the same sums, 1.4x slower)
        mean = torch.mul(w, part, out=rows).sum(dim=0).div_(total)
        torch.sub(part, mean, out=rows).square_().mul_(w)
        means.append(mean)
        variances.append(rows.sum(dim=0).div_(total))
    return torch.stack(means), torch.stack(variances)


class PackedEcapa:
    """speechbrain's ECAPA_TDNN forward on packed features [N, n_mels] -> embeddings [B, D], its weights
    prepared once (the layout of each product, batch norms as multiply-adds or folded into the next
    product) for every batch it embeds. Build it again when the weights change."""

    def __init__(self, model: torch.nn.Module):
        from speechbrain.lobes.models.ECAPA_TDNN import TDNNBlock

        blocks = list(model.blocks)
        if not isinstance(blocks[0], TDNNBlock) or any(isinstance(b, TDNNBlock) for b in blocks[1:]):
            raise ValueError(
                "packed inference expects speechbrain's ECAPA_TDNN: one TDNN block, then SE-Res2Net blocks"
            )
        with torch.no_grad():
            self.first = _Tdnn(blocks[0])
            self.blocks = [_SERes2Net(b) for b in blocks[1:]]
            self.mfa = _Tdnn(model.mfa)
            # the MFA's activation reaches the pooling centred on its batch norm's running mean c (see
            # _AttentivePooling): after a ReLU, max(h, 0) - c is max(h - c, -c), the product with bias
            # b - c and a floor of -c, no extra pass (another activation is centred by a subtraction)
            dtype = model.mfa.conv.conv.weight.dtype
            self.centre = model.mfa.norm.norm.running_mean.to(dtype).clone()
            self.mfa_bias = (self.mfa.bias if self.mfa.bias is not None else 0) - self.centre
            self.mfa_weight_t = self.mfa.weight.t().contiguous()  # [3C, C']: torch.mm's layout
            self.pooling = _AttentivePooling(model.asp, model.mfa.norm, dtype, self.centre)
            self.pooled_norm = _affine(model.asp_bn, dtype)
            self.fc = model.fc

    def __call__(self, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
        x = self.first(frames, packing)
        # the SE-Res2Net blocks write their outputs side by side: the multi-layer feature aggregation's input
        outputs = torch.empty(packing.total, sum(b.width for b in self.blocks), dtype=x.dtype, device=x.device)
        start = 0
        for block in self.blocks:
            x = block(x, packing, outputs[:, start : start + block.width])
            start += block.width
        if self.mfa.relu:  # its norm goes into the pooling
            mfa = torch.addmm(self.mfa_bias.to(outputs.dtype), outputs, self.mfa_weight_t.to(outputs.dtype))
            mfa = torch.maximum(mfa, -self.centre.to(mfa.dtype), out=mfa)
        else:
            mfa = F.linear(outputs, self.mfa.weight, self.mfa.bias)
            mfa = _activation_(mfa, self.mfa.activation).sub_(self.centre.to(mfa.dtype))
        pooled = self.pooling(mfa, packing)
        scale, shift = self.pooled_norm
        return _linear(torch.addcmul(shift.to(pooled.dtype), pooled, scale.to(pooled.dtype)), self.fc)


def ecapa_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's ECAPA_TDNN forward on packed features [N, n_mels] -> embeddings [B, D]."""
    return PackedEcapa(model)(frames, packing)


def xvector_packed(model: torch.nn.Module, frames: torch.Tensor, packing: Packing, noise_seed: int = 0) -> torch.Tensor:
    """speechbrain's Xvector forward on packed features [N, n_mels] -> embeddings [B, D]; the pooling noise
    is what torch.manual_seed(noise_seed) before a one-utterance forward gives."""
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
            x = _statistics_pooling(x, layer, packing, noise_seed)  # [B, 2C]
        elif isinstance(layer, Linear):
            x = F.linear(x, layer.w.weight, layer.w.bias)
        else:  # the activation
            x = _activation_(x, layer)
    return x


def _statistics_pooling(x: torch.Tensor, pooling: torch.nn.Module, packing: Packing, seed: int = 0) -> torch.Tensor:
    """speechbrain's StatisticsPooling per utterance ([N, C] -> [B, 2C]), with the noise it adds to the mean.

    Unbatched, the embedder seeds torch with `seed` (the asv plugin: 0) before each forward, so every
    utterance's mean gets the same noise, drawn for one [1, C] row: the same row is added here to each
    utterance's mean.
    """
    if not (pooling.return_mean and pooling.return_std):
        raise ValueError("packed inference supports statistics pooling of mean and std")
    parts = packing.parts(x)
    mean = packing.mean(x)
    # torch.std's unbiased estimate in two passes (its single-pass form is several times slower over rows)
    std = torch.stack([(part - m).square_().sum(dim=0) / (part.shape[0] - 1) for part, m in zip(parts, mean)]).sqrt()
    generator = torch.Generator(device=x.device).manual_seed(seed)  # what torch.manual_seed(seed) gives that device
    noise = torch.randn(1, x.shape[1], generator=generator, device=x.device)
    noise -= torch.min(noise)
    noise /= torch.max(noise)
    noise = pooling.eps * ((1 - 9) * noise + 9)
    return torch.cat([mean + noise.to(x.dtype), std + pooling.eps], dim=1)


class PackedXvector:
    """speechbrain's Xvector forward on packed features, as PackedEcapa is called."""

    def __init__(self, model: torch.nn.Module, noise_seed: int = 0):
        from speechbrain.nnet.CNN import Conv1d
        from speechbrain.nnet.linear import Linear
        from speechbrain.nnet.normalization import BatchNorm1d
        from speechbrain.nnet.pooling import StatisticsPooling

        for layer in model.blocks:  # what xvector_packed runs, refused before any batch rather than during one
            if isinstance(layer, Conv1d):
                conv = layer.conv
                kernel = conv.weight.shape[-1]
                if conv.stride != (1,) or conv.groups != 1 or conv.padding != (0,):
                    raise ValueError("packed inference supports stride-1, ungrouped 'same' convolutions only")
                if kernel > 1 and (layer.padding != "same" or layer.padding_mode != "reflect"):
                    raise ValueError("packed inference supports reflect-padded 'same' convolutions only")
            elif isinstance(layer, StatisticsPooling):
                if not (layer.return_mean and layer.return_std):
                    raise ValueError("packed inference supports statistics pooling of mean and std")
            elif (
                not isinstance(layer, (BatchNorm1d, Linear)) and type(layer).__module__ != "torch.nn.modules.activation"
            ):
                raise ValueError(f"packed inference does not run an x-vector's {type(layer).__name__}")
        self.model = model
        self.noise_seed = noise_seed

    def __call__(self, frames: torch.Tensor, packing: Packing) -> torch.Tensor:
        return xvector_packed(self.model, frames, packing, self.noise_seed)


PACKED_FORWARD = {"ecapa": ecapa_packed, "xvector": xvector_packed}
PACKED_NETWORK = {"ecapa": PackedEcapa, "xvector": PackedXvector}  # built once per call, run per batch
