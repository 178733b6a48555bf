"""What a system strategy (systems.py) reads of the attacker that runs it, and the one helper both share.

The attacker (attacker.py) chooses its strategy from systems.py; the strategy's hooks are handed the
attacker and read only the parts `AttackerParts` names, so systems.py needs no import of attacker.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from vpeval.types import Utterance
from vpeval_multiutt.params import MultiUttParams

if TYPE_CHECKING:
    import torch


class AttackerParts(Protocol):
    """The attacker's public parts a strategy's hooks read (MultiUttAttacker provides them)."""

    name: str
    params: MultiUttParams
    audio: Any  # AudioModel, once built
    text: Any  # TextModel, once built
    fusion: Any  # the strategy's fusion layers, once built

    @property
    def device(self) -> str: ...

    @property
    def frames(self) -> Any:
        """The frame source of the audio network (fbank or a frontend)."""

    @property
    def cross_frames(self) -> Any:
        """ssl-whisper's second frame source (Whisper frames)."""

    def tensor(self, array: np.ndarray) -> torch.Tensor: ...

    def texts(self, utterances: Sequence[Utterance], what: str = "transcribe") -> list[str]: ...

    def frame_maps(self, side: list[Utterance]) -> list: ...

    def audio_side(self, side: list[Utterance]) -> torch.Tensor: ...

    def audio_utterances(self, side: list[Utterance]) -> torch.Tensor: ...

    def crops(self, utterances: Sequence[Utterance], picks: np.ndarray, rng: np.random.Generator) -> torch.Tensor: ...

    def prosody(self, utterances: Sequence[Utterance], standardise: bool = True) -> np.ndarray: ...

    def prosody_input(self, sides: np.ndarray) -> np.ndarray: ...


def to_numpy(tensor) -> np.ndarray:
    """A result tensor (on any device, in any precision) as float32 numpy on the CPU."""
    return tensor.detach().float().cpu().numpy()
