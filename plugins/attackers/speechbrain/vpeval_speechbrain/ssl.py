"""VPC 2026's asv_ssl: WavLM-Large layers and log-mel frames through VPC's two-stream ECAPA variant.

The toolkit (evaluation/privacy/asv/speechbrain_vectors.py, model_type ecapa_ssl) does not read the
folder's hyperparams.yaml: it builds its own `ECAPA_TDNN_test` (ecapa_model_wavlm_24layer.py) with fixed
defaults, loads embedding_model.ckpt into it, and embeds each file as follows:
- log-mel stream: the peak-normalised, zero-trimmed waveform -> Fbank(80) -> sentence mean normalisation
  -> speechbrain's ECAPA blocks (TDNN, three SE-Res2Net);
- WavLM stream: the file as read (no peak division, no trimming) -> WavLM-Large, the output of each of
  its 24 transformer layers -> a softmax-weighted sum (learned `weighted_sum.layer_weights`) -> four more
  SE-Res2Net blocks of the WavLM width;
- the last three blocks of each stream are concatenated, the WavLM stream brought to the log-mel frame
  count (`resample_frames`: means over bins to shorten, whole-sequence repetition to lengthen, as VPC),
  multiplied element-wise, then MFA, attentive statistics pooling, batch norm and the linear layer as in
  ECAPA; the vector is L2-normalised.
The network here is written from that description with speechbrain's own blocks and VPC's parameter
names, so VPC's checkpoint loads strictly; its sizes are read from the checkpoint's shapes. The WavLM
layers come from vpeval's `wavlm` frontend (context.get), which reads WavLM-Large.pt weights-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from vpeval.errors import MissingModelError
from vpeval.torchload import load_weights_only

WAVLM_FILE = "WavLM-Large.pt"
WEIGHTS = "embedding_model.ckpt"
KERNELS = (5, 3, 3, 3, 1)  # ECAPA_TDNN_test's defaults (VPC builds it without arguments)
DILATIONS = (1, 2, 3, 4, 1)


LAYOUT_MARKER = "asv_ssl.txt"  # in a folder vpeval trained: the WavLM model stays where the parameters say


def is_ssl_folder(folder: Path) -> bool:
    return (folder / WAVLM_FILE).is_file() or (folder / LAYOUT_MARKER).is_file()


def resample_frames(x: torch.Tensor, target: int) -> torch.Tensor:
    """[B, D, T] -> [B, D, target] as VPC's resample_tensor: shorter by means over consecutive bins (the
    last T % target bins one frame wider), longer by repeating the whole sequence and then its start."""
    length = x.shape[2]
    if length == target:
        return x
    if length > target:
        base, extra = divmod(length, target)
        widths = [base] * (target - extra) + [base + 1] * extra
        return torch.cat([chunk.mean(dim=2, keepdim=True) for chunk in torch.split(x, widths, dim=2)], dim=2)
    repeats, remainder = divmod(target, length)
    return torch.cat([x.repeat(1, 1, repeats), x[:, :, :remainder]], dim=2)


class WeightedLayerSum(torch.nn.Module):
    """softmax(layer_weights)-weighted sum of the layers (VPC's WeightedLayerSum, initialised to ones)."""

    def __init__(self, num_layers: int):
        super().__init__()
        self.layer_weights = torch.nn.Parameter(torch.ones(num_layers))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """[B, K, T, D] -> [B, T, D]."""
        weights = torch.softmax(self.layer_weights, dim=0)
        return (layers * weights.view(1, -1, 1, 1)).sum(dim=1)


class EcapaSsl(torch.nn.Module):
    """The two-stream ECAPA of VPC 2026's asv_ssl (parameter names as VPC's, for its checkpoint)."""

    def __init__(
        self,
        input_size: int,
        channels: list[int],
        num_layers: int,
        lin_neurons: int = 192,
        attention_channels: int = 128,
        res2net_scale: int = 8,
        se_channels: int = 128,
        global_context: bool = True,
        dropout: float = 0.3,  # ECAPA_TDNN_test's default: active only while fine-tuning
    ):
        super().__init__()
        from speechbrain.lobes.models.ECAPA_TDNN import (
            AttentiveStatisticsPooling,
            BatchNorm1d,
            Conv1d,
            SERes2NetBlock,
            TDNNBlock,
        )

        def se_block(c_in: int, c_out: int, i: int) -> torch.nn.Module:
            return SERes2NetBlock(
                c_in,
                c_out,
                res2net_scale=res2net_scale,
                se_channels=se_channels,
                kernel_size=KERNELS[i],
                dilation=DILATIONS[i],
                dropout=dropout,
            )

        relu = torch.nn.ReLU
        self.blocks = torch.nn.ModuleList(
            [TDNNBlock(input_size, channels[0], KERNELS[0], DILATIONS[0], relu, 1, dropout)]
        )
        self.blocks.extend(se_block(channels[i - 1], channels[i], i) for i in range(1, len(channels) - 1))
        self.blocks_features = torch.nn.ModuleList(se_block(channels[i], channels[i], i) for i in range(4))
        self.mfa = TDNNBlock(
            channels[-2] * (len(channels) - 2), channels[-1], KERNELS[-1], DILATIONS[-1], relu, 1, dropout
        )
        self.weighted_sum = WeightedLayerSum(num_layers)
        self.asp = AttentiveStatisticsPooling(
            channels[-1], attention_channels=attention_channels, global_context=global_context
        )
        self.asp_bn = BatchNorm1d(input_size=channels[-1] * 2)
        self.fc = Conv1d(in_channels=channels[-1] * 2, out_channels=lin_neurons, kernel_size=1)

    def forward(self, feats: torch.Tensor, layers: torch.Tensor) -> torch.Tensor:
        """Log-mel frames [B, T, F] and WavLM layers [B, K, T', D] -> embeddings [B, 1, lin_neurons]."""
        x = feats.transpose(1, 2)
        ssl = self.weighted_sum(layers).transpose(1, 2)
        mel_outputs, ssl_outputs = [], []
        for block in self.blocks:
            x = block(x)
            mel_outputs.append(x)
        for block in self.blocks_features:
            ssl = block(ssl)
            ssl_outputs.append(ssl)
        mel = torch.cat(mel_outputs[1:], dim=1)
        ssl = resample_frames(torch.cat(ssl_outputs[1:], dim=1), mel.shape[2])
        pooled = self.asp_bn(self.asp(self.mfa(ssl * mel)))
        return self.fc(pooled).transpose(1, 2)


def _sizes(state: dict, path: Path) -> dict:
    """The network's sizes from the checkpoint's shapes (VPC's defaults: 80 mel, 1024 x 4 / 3072, 24 layers)."""
    try:
        first = state["blocks.0.conv.conv.weight"]
        scale = 1 + len({k.split(".")[4] for k in state if k.startswith("blocks.1.res2net_block.blocks.")})
        asp = state["asp.tdnn.conv.conv.weight"]
        mfa = state["mfa.conv.conv.weight"].shape[0]
        return {
            "input_size": int(first.shape[1]),
            "channels": [int(first.shape[0])]
            + [int(state[f"blocks.{i}.tdnn1.conv.conv.weight"].shape[0]) for i in (1, 2, 3)]
            + [int(mfa)],
            "num_layers": int(state["weighted_sum.layer_weights"].shape[0]),
            "lin_neurons": int(state["fc.conv.weight"].shape[0]),
            "attention_channels": int(asp.shape[0]),
            "res2net_scale": scale,
            "se_channels": int(state["blocks.1.se_block.conv1.conv.weight"].shape[0]),
            "global_context": int(asp.shape[1]) == 3 * int(mfa),
        }
    except (KeyError, AttributeError, IndexError) as exc:
        raise MissingModelError(
            f"{path} is not the two-stream ECAPA of VPC 2026's asv_ssl (no {exc}); a folder with {WAVLM_FILE} "
            f"needs that network's {WEIGHTS}."
        ) from None


def save_ssl_network(network: EcapaSsl, folder: Path) -> None:
    """embedding_model.ckpt as VPC's folder holds it (CPU tensors), and the marker of the asv_ssl layout."""
    from vpeval.device import cpu_state_dict

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(cpu_state_dict(network), folder / WEIGHTS)
    (folder / LAYOUT_MARKER).write_text("VPC 2026 asv_ssl: embedding_model.ckpt; the WavLM model is the attacker's.\n")


def load_ssl_network(folder: Path) -> EcapaSsl:
    path = folder / WEIGHTS
    if not path.is_file():
        raise MissingModelError(f"{path} is missing; VPC 2026's asv_ssl folder holds it next to {WAVLM_FILE}.")
    state = load_weights_only(path)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    state = {k.removeprefix("module."): v for k, v in state.items()}  # as VPC strips DataParallel's prefix
    network = EcapaSsl(**_sizes(state, path))
    try:
        network.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise MissingModelError(
            f"{path} does not load into VPC 2026's asv_ssl network ({': '.join(lines[:2])[:300]})."
        ) from None
    return network.eval()


class SslEmbedder:
    """Embeddings of VPC 2026's asv_ssl, each as the toolkit computes it one file at a time (WavLM unpadded):
    here WavLM runs masked batches that give each file those frames."""

    def __init__(self, folder: Path, frontend, device: str = "cpu", autocast=None):
        from speechbrain.lobes.features import Fbank
        from speechbrain.processing.features import InputNormalization

        self.folder = folder
        self.network = load_ssl_network(folder).to(device)
        width = frontend.layer_dim
        expected = self.network.blocks_features[0].tdnn1.conv.conv.in_channels
        if width != expected:
            raise MissingModelError(
                f"{folder / WEIGHTS} expects SSL layers of width {expected}, "
                f"but the WavLM model gives {width}; use the WavLM model the network was trained with."
            )
        n_mels = self.network.blocks[0].conv.conv.in_channels
        self.features = Fbank(n_mels=n_mels).to(device).eval()
        self.norm = InputNormalization(norm_type="sentence", std_norm=False).to(device)
        self.frontend = frontend
        self.device = device
        self.autocast = autocast

    @property
    def dim(self) -> int:
        return int(self.network.fc.conv.out_channels)

    def embed(self, prepared: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """`prepared`: the peak-normalised, zero-trimmed waveform (log-mel stream); `raw`: the file's audio."""
        return self.embed_many([prepared], [raw])[0]

    def embed_many(self, prepared: Sequence[np.ndarray], raws: Sequence[np.ndarray]) -> np.ndarray:
        """[B, D] unit-length embeddings: WavLM's layers of all `raws` in the frontend's masked batches (each
        waveform's frames as it gets them alone: its own normalisation, group norm and attention mask), then the
        two-stream network on each waveform alone (its reflect padding, SE means and pooling see one utterance)."""
        slabs = [self.frontend.split_layers(out.features) for out in self.frontend.encode_batch(list(raws))]
        self.network.eval()
        vectors = []
        with torch.inference_mode():
            for wave, slab in zip(prepared, slabs, strict=True):
                layers = torch.from_numpy(slab).to(self.device).unsqueeze(0)  # [1, K, T', D]
                wave = torch.from_numpy(np.asarray(wave, dtype=np.float32)).to(self.device).unsqueeze(0)
                feats = self.norm(self.features(wave), torch.ones(1, device=self.device))
                with self.autocast() if self.autocast is not None else _nothing():
                    vector = self.network(feats, layers.float())
                vectors.append(F.normalize(vector.float().reshape(1, -1), dim=1)[0].cpu().numpy())
        return np.stack(vectors).astype(np.float32)


def toolkit_sign(vectors: np.ndarray) -> np.ndarray:
    """VPC 2026's extract_vector on [1, 1, D] outputs: F.normalize(vec, dim=1) normalises over the axis of length
    one, dividing each component by its own magnitude (clamped at 1e-12): a +-1 vector, the signs of the
    network's output. Given vpeval's unit-length embeddings [B, D] (the same signs), as float32."""
    with torch.no_grad():
        rows = torch.from_numpy(np.asarray(vectors, dtype=np.float32)).unsqueeze(1)  # [B, 1, D]
        return F.normalize(rows, dim=1).squeeze(1).numpy()


TOOLKIT_SIGN_NOTE = (
    "embedding_normalization toolkit-sign: every asv_ssl embedding is the +-1 sign vector of the network's output, "
    "as the VPC 2026 toolkit's extract_vector leaves it (F.normalize(vec, dim=1) of a [1, 1, D] tensor), so its "
    "EERs are the challenge's official numbers, not those of unit-length embeddings (l2; docs/vpc.md)"
)


def wavlm_layers(frontend, raws, device: str) -> torch.Tensor:
    """Every transformer layer of each waveform, zero-padded to the longest: [B, K, T', D] on `device`."""
    slabs = [frontend.split_layers(out.features) for out in frontend.encode_batch(list(raws))]  # [K, T_i, D]
    longest = max(s.shape[1] for s in slabs)
    padded = np.zeros((len(slabs), slabs[0].shape[0], longest, slabs[0].shape[2]), dtype=np.float32)
    for i, s in enumerate(slabs):
        padded[i, :, : s.shape[1]] = s
    return torch.from_numpy(padded).to(device)


def _nothing():
    from contextlib import nullcontext

    return nullcontext()
