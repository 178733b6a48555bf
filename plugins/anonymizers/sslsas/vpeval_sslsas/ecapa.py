"""ssl-sas-ecapa: the release's ECAPA-TDNN (ECAPA-TDNN/embedding_model.ckpt) as a speaker encoder.

The release extracts speaker vectors with configs/extract_ecapa_f_ecapa_vox.yaml: speechbrain's
Fbank(n_mels=80), InputNormalization(sentence, std_norm=False), ECAPA_TDNN(80, channels [512, 512, 512,
512, 1536], kernels [5, 3, 3, 3, 1], dilations [1, 2, 3, 4, 1], attention 128, lin_neurons 192); the
raw 192-d output, no length normalisation (mean_var_norm_emb is commented out). The same network is
built here from the library vpeval-torch (speechbrain's classes), its sizes read from the checkpoint's
shapes, and the file loaded strictly with weights_only=True. These are the vectors the selection (or
any) embedding anonymizer edits and the generator is conditioned on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Params, SpeakerEncoder
from vpeval.errors import MissingModelError
from vpeval_sslsas.layout import ECAPA


class EcapaParams(Params):
    model: str = Field(
        description="The SSL-SAS release folder (pretrained_models_anon_xv); ECAPA-TDNN/embedding_model.ckpt is read."
    )


def ecapa_shape(state: dict, path: Path) -> tuple[int, list[int], int, int]:
    """(n_mels, channels, attention_channels, embedding_dim) of a speechbrain ECAPA_TDNN state dict."""
    try:
        first = state["blocks.0.conv.conv.weight"]
        channels = [int(first.shape[0])]
        channels += [int(state[f"blocks.{i}.tdnn1.conv.conv.weight"].shape[0]) for i in (1, 2, 3)]
        channels.append(int(state["mfa.conv.conv.weight"].shape[0]))
        attention = int(state["asp.tdnn.conv.conv.weight"].shape[0])
        dim = int(state["fc.conv.weight"].shape[0])
    except (KeyError, AttributeError, IndexError):
        raise MissingModelError(
            f"{path} is not a speechbrain ECAPA_TDNN state dict (blocks.*, mfa, asp, fc); give the release's "
            "ECAPA-TDNN/embedding_model.ckpt."
        ) from None
    return int(first.shape[1]), channels, attention, dim


class SslSasEcapa(SpeakerEncoder):
    """The SSL-SAS release's ECAPA-TDNN (speechbrain, 192-d, VoxCeleb), read as data."""

    name: ClassVar[str] = "ssl-sas-ecapa"
    sample_rate: ClassVar[int] = 16000
    dim: ClassVar[int] = 192
    device_sensitive: ClassVar[bool] = True
    Params = EcapaParams

    @classmethod
    def missing_paths(cls, params: EcapaParams) -> list[str]:
        path = Path(params.model).expanduser() / ECAPA
        if path.is_file():
            return []
        return [f"the SSL-SAS speaker encoder {path} is missing: copy the release's ECAPA-TDNN folder."]

    def _load(self):
        if getattr(self, "_network", None) is not None:
            return
        problems = self.missing_paths(self.params)
        if problems:
            raise MissingModelError(problems[0])
        from vpeval.torchload import load_weights_only
        from vpeval_torch.ecapa import ecapa_tdnn
        from vpeval_torch.fbank import FbankFeatures

        self.context.apply_threads()
        path = Path(self.params.model).expanduser() / ECAPA
        state = load_weights_only(path)
        if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
            state = state["state_dict"]
        if not isinstance(state, dict):
            raise MissingModelError(f"{path} is not a state dict; give the release's ECAPA-TDNN/embedding_model.ckpt.")
        state = {k.removeprefix("module."): v for k, v in state.items()}
        n_mels, channels, attention, dim = ecapa_shape(state, path)
        network = ecapa_tdnn(n_mels, channels, attention, dim)
        try:
            network.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else str(exc)
            raise MissingModelError(f"{path} does not fit speechbrain's ECAPA_TDNN: {first}") from None
        self._features = FbankFeatures(n_mels).to(self.context.device)
        self._network = network.eval().requires_grad_(False).to(self.context.device)
        self.vector_dim = dim

    def embed(self, audio: np.ndarray) -> np.ndarray:
        return self.embed_batch([audio])[0]

    def embed_batch(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """One utterance at a time (unpadded, as the release's extractor runs them)."""
        import torch

        self._load()
        out = []
        with torch.no_grad():
            for audio in audios:
                wave = torch.as_tensor(np.asarray(audio, dtype=np.float32), device=self.context.device)[None]
                with self.context.autocast():
                    vector = self._network(self._features(wave))
                out.append(vector.float().reshape(-1).cpu().numpy())
        return np.stack(out).astype(np.float64)
