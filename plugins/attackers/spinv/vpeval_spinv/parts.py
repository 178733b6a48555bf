"""What training (fit.py) reads of the spinv attacker: its public parts, as a Protocol.

The attacker (attacker.py) calls fit_spinv with itself; fit.py reads only the parts `SpInvParts`
names, so it needs no import of attacker.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from vpeval.api import PluginContext
from vpeval.types import FrontendOutput, Utterance
from vpeval_spinv.params import SpInvParams


class SpInvParts(Protocol):
    """The spinv attacker's public parts that training reads (SpInv provides them)."""

    params: SpInvParams
    context: PluginContext

    @property
    def encoder(self) -> Any:
        """The frozen target speaker encoder F."""

    def attacked_frontend(self) -> Any: ...

    def frontend_outputs(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]: ...

    def target_embeddings(self, utterances: Sequence[Utterance]) -> list[np.ndarray]: ...

    def embed_waveform(self, audio: np.ndarray) -> np.ndarray: ...

    def embed_waveforms(self, audios: Sequence[np.ndarray]) -> np.ndarray: ...

    def frames_for(self, seconds: float, frame_rate: float) -> int: ...
