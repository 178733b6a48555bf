"""The speechbrain networks: ECAPA-TDNN and the TDNN x-vector, plus their training classifiers."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

SAMPLE_RATE = 16000

# Fixed per architecture, as in the VoicePrivacy 2024 recipes.
KERNELS = {"ecapa": (5, 3, 3, 3, 1), "xvector": (5, 3, 3, 1, 1)}
DILATIONS = {"ecapa": (1, 2, 3, 4, 1), "xvector": (1, 2, 3, 1, 1)}


@dataclass(frozen=True)
class ModelConfig:
    """What it takes to rebuild an embedding network; stored next to its weights."""

    architecture: str  # "ecapa" or "xvector"
    n_mels: int
    channels: tuple[int, ...]
    embedding_dim: int
    sample_rate: int = SAMPLE_RATE

    def to_json(self) -> dict:
        data = asdict(self)
        data["channels"] = list(self.channels)
        return data

    @classmethod
    def from_json(cls, data: dict) -> ModelConfig:
        return cls(
            architecture=str(data["architecture"]),
            n_mels=int(data["n_mels"]),
            channels=tuple(int(c) for c in data["channels"]),
            embedding_dim=int(data["embedding_dim"]),
            sample_rate=int(data.get("sample_rate", SAMPLE_RATE)),
        )


def build_embedding_model(config: ModelConfig) -> torch.nn.Module:
    """Features [B, frames, n_mels] -> embeddings [B, 1, D]."""
    from vpeval_asv.padding import use_fast_padding

    return use_fast_padding(_speechbrain_model(config))


def _speechbrain_model(config: ModelConfig) -> torch.nn.Module:
    if config.architecture == "ecapa":
        from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN

        return ECAPA_TDNN(
            input_size=config.n_mels,
            lin_neurons=config.embedding_dim,
            channels=list(config.channels),
            kernel_sizes=list(KERNELS["ecapa"]),
            dilations=list(DILATIONS["ecapa"]),
            attention_channels=128,
        )
    if config.architecture == "xvector":
        from speechbrain.lobes.models.Xvector import Xvector

        return Xvector(
            in_channels=config.n_mels,
            activation=torch.nn.LeakyReLU,
            tdnn_blocks=5,
            tdnn_channels=list(config.channels),
            tdnn_kernel_sizes=list(KERNELS["xvector"]),
            tdnn_dilations=list(DILATIONS["xvector"]),
            lin_neurons=config.embedding_dim,
        )
    raise ValueError(f"unknown architecture {config.architecture!r}")


class SpeakerClassifier(torch.nn.Module):
    """The training head and its loss: AAM softmax on cosine logits, or softmax cross-entropy.

    aam: speechbrain's ECAPA cosine Classifier with LogSoftmaxWrapper(AdditiveAngularMargin), as the
    VoicePrivacy ECAPA recipe; softmax: speechbrain's x-vector Classifier (one hidden block, log-softmax)
    with NLL, as the VoicePrivacy x-vector recipe.
    """

    def __init__(self, loss: str, embedding_dim: int, speakers: int, margin: float, scale: float):
        super().__init__()
        self.loss_kind = loss
        if loss == "aam":
            from speechbrain.lobes.models.ECAPA_TDNN import Classifier
            from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper

            self.head = Classifier(input_size=embedding_dim, out_neurons=speakers)
            self.cost = LogSoftmaxWrapper(AdditiveAngularMargin(margin=margin, scale=scale))
        elif loss == "softmax":
            from speechbrain.lobes.models.Xvector import Classifier

            self.head = Classifier(
                input_shape=[None, None, embedding_dim],
                activation=torch.nn.LeakyReLU,
                lin_blocks=1,
                lin_neurons=512,
                out_neurons=speakers,
            )
            self.cost = None
        else:
            raise ValueError(f"unknown loss {loss!r}")

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean loss of embeddings [B, 1, D] with integer speaker labels [B]."""
        outputs = self.head(embeddings)
        if self.cost is not None:
            return self.cost(outputs, labels.unsqueeze(1))
        return torch.nn.functional.nll_loss(outputs.squeeze(1), labels)
