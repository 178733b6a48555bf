"""Building a loaded network from a model file: the torch rebuild with its checkpoint, or an ONNX session.

Both take mean-normalised fbank [frames, feat_dim] and give embeddings. The torch one runs zero-padded
batches with per-row frame counts (a batch of one runs the published operations unmasked); the ONNX one
runs each utterance alone, as exported graphs take no frame counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch

from vpeval.errors import MissingModelError
from vpeval_3dspeaker.checkpoint import detect_layout, from_wespeaker, load_strict, read_state_dict

# Pooling's epsilon under the square root: 3D-Speaker's CAM++ has none, its ERes2Net 1e-8, WeSpeaker 1e-7.
POOL_EPS = {("campplus", "3dspeaker"): 0.0, ("eres2net", "3dspeaker"): 1e-8}
WESPEAKER_POOL_EPS = 1e-7
# The embedding layer's weight, whose rows are the embedding size.
LAST_LAYER = {"campplus": ("xvector.dense.linear.weight",), "eres2net": ("seg_2.weight", "seg_1.weight")}
ONNX_INPUTS = {"feature": "3dspeaker", "feats": "wespeaker"}  # export_speaker_embedding_onnx.py, export_onnx.py


class TorchNetwork:
    """A rebuilt network in eval mode on `device`; `embed` runs one padded batch."""

    def __init__(self, network: torch.nn.Module, device: str, autocast: Callable | None, layout: str):
        self.network = network.eval().to(device)
        self.device = device
        self.autocast = autocast or nullcontext
        self.layout = layout
        self.dim = int(network.embedding_size)

    def embed(self, feats: Sequence[torch.Tensor]) -> np.ndarray:
        """[B, E] float32 for fbank matrices [T_i, F] (on this device)."""
        with torch.inference_mode(), self.autocast():
            if len(feats) == 1:
                out = self.network(feats[0].unsqueeze(0))
            else:
                lengths = torch.tensor([f.shape[0] for f in feats], device=self.device)
                padded = torch.nn.utils.rnn.pad_sequence(list(feats), batch_first=True)
                out = self.network(padded, lengths)
        return out.float().cpu().numpy().astype(np.float32)


class OnnxNetwork:
    """An exported graph (input [1, T, F] fbank, first output the embedding) through onnxruntime."""

    def __init__(self, path: Path, layout: str, device: str, threads: int, name: str):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingModelError(
                f"{name}: {path} is an ONNX export and onnxruntime is not installed ({exc}); pip install onnxruntime."
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        providers = ["CPUExecutionProvider"]
        if device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self.session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types for unreadable graphs
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise MissingModelError(
                f"{name}: {path} is not a readable ONNX model ({reason}); give an exported *.onnx."
            ) from None
        inputs = self.session.get_inputs()
        if len(inputs) != 1 or len(inputs[0].shape) != 3:
            raise MissingModelError(
                f"{name}: {path} takes {len(inputs)} inputs; give an export whose one input is fbank [B, T, F] "
                "(3D-Speaker's export_speaker_embedding_onnx.py or WeSpeaker's export_onnx.py)."
            )
        self.input = inputs[0].name
        if layout == "auto":
            if self.input not in ONNX_INPUTS:
                raise MissingModelError(
                    f"{name}: {path} names its input '{self.input}', neither 3D-Speaker's 'feature' nor WeSpeaker's "
                    "'feats'; set layout: 3dspeaker or layout: wespeaker (which front end it was trained on)."
                )
            layout = ONNX_INPUTS[self.input]
        self.layout = layout
        self.path = path
        size = self.session.get_outputs()[0].shape[-1]
        if isinstance(size, int):
            self.dim = size
        else:  # a dynamic embedding axis: one forward of silence tells it
            feat_dim = inputs[0].shape[-1] if isinstance(inputs[0].shape[-1], int) else 80
            self.dim = self.embed([torch.zeros(200, feat_dim)]).shape[1]

    def embed(self, feats: Sequence[torch.Tensor]) -> np.ndarray:
        rows = []
        for f in feats:
            out = self.session.run(None, {self.input: f.cpu().numpy()[None].astype(np.float32)})[0]
            rows.append(np.asarray(out, dtype=np.float32).reshape(-1))
        return np.stack(rows)


def torch_network(architecture: str, params, path: Path, device: str, autocast, name: str, build) -> TorchNetwork:
    """The checkpoint at `path` in `build(params, embedding_size, pool_eps)`, loaded strictly."""
    what = {"campplus": "a CAM++", "eres2net": "an ERes2Net"}[architecture]
    state = read_state_dict(path, what)
    # The key names are read whichever front end the model was trained on: WeSpeaker's hub `campplus` and
    # `eres2net` are 3D-Speaker models in WeSpeaker's names, which its CLI feeds 3D-Speaker's fbank.
    layout = detect_layout(state) if params.layout == "auto" else params.layout
    state = from_wespeaker(state)
    size = params.embedding_size
    if size is None:
        rows = [state[k].shape[0] for k in LAST_LAYER[architecture] if k in state and state[k].dim() >= 2]
        size = rows[0] if rows else 192
    eps = POOL_EPS.get((architecture, layout), WESPEAKER_POOL_EPS)
    network = build(params, size, eps)
    hint = (
        f"set {name}'s architecture params to the checkpoint's (its README lists the published ones), "
        f"or give {what} checkpoint."
    )
    load_strict(network, state, path, f"{name}'s network", hint)
    return TorchNetwork(network, device, autocast, layout)
