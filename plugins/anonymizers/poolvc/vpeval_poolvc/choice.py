"""How poolvc chooses the pool speaker whose voice an utterance gets.

- "random": any pool speaker, drawn from the voice's rng.
- "farthest-random" (VoicePrivacy B1-style rule): rank pool speakers by cosine similarity to the
  source in a speaker encoder's space, keep the farthest (200 of 1,160 in B1, the same fraction of a
  smaller pool), pick one from the voice's rng. Without an encoder it falls back to "random".
- the name of an embedding anonymizer (selection, ohnn, emotion-compensation, ...): anonymize the
  source's speaker vector and take the pool speaker nearest to the pseudo-speaker vector.

The voice's rng is always drawn from first, so a speaker-level key gives one pool speaker per speaker.
"""

from __future__ import annotations

import numpy as np

from vpeval.api import Voice


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


B1_POOL_SIZE = 1160  # LibriTTS train-other-500 speakers, the pool B1's "200 farthest" refers to


def farthest_count(pool_size: int, farthest: int) -> int:
    """`farthest` when the pool has that many speakers, else the same fraction of the pool as B1 keeps
    of its 1,160 (at least one)."""
    if pool_size >= farthest:
        return farthest
    return max(1, int(round(pool_size * farthest / B1_POOL_SIZE)))


def random_choice(n_speakers: int, voice: Voice) -> int:
    return int(voice.rng.integers(n_speakers))


def farthest_random_choice(source: np.ndarray, means: np.ndarray, n_far: int, draw: float) -> int:
    """One of the n_far speakers least similar to the source; `draw` in [0, 1) picks which.

    The candidates are taken in pool order (not distance order), so the small changes in the
    farthest set between utterances of one speaker rarely change a speaker-level choice.
    """
    far = np.sort(np.argsort(unit(means) @ unit(source), kind="stable")[:n_far])
    return int(far[int(draw * len(far))])


def nearest_speaker(vector: np.ndarray, means: np.ndarray) -> int:
    return int(np.argmax(unit(means) @ unit(vector)))
