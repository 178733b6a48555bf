"""OHNN speaker anonymizer (Miao et al., 2023; the 'OH' system of seed 003).

An orthogonal Householder neural network rotates an original speaker vector x into a pseudo-speaker
vector y = M x. It is trained on pool speaker vectors with

    L = w_aam * AAM(y, centres, pi(speaker)) + w_cos * mean cos(x, y)

- AAM: additive angular margin softmax against the pool speakers' (frozen, unit) mean vectors, with
  each speaker's target a different pool speaker pi(speaker) (a seeded derangement). Rotated vectors
  thus land on real speakers' regions (they stay natural, 'following the distribution of the original
  speaker space') and distinct speakers stay distinct (pi is one-to-one).
- cosine term: pushes every rotated vector away from its original.

Seed 003's construction (section 4.1, the defaults): one OHNN, its parameters initialised with random
seed 50 (`init_seed`), trained on the speakers of the speaker encoder's own training data (VoxCeleb-2
there; the pool here) with "an additive loss function that combines weighted angular margin softmax and
cosine similarity" (the weights are aam_weight and cos_weight), then applied as one learned rotation
y = M x to every utterance (`voice_target: none`). The paper defers the loss details to Miao et al.
(2023); the derangement targets against frozen pool means are this implementation's reading of its
classification loss (see the README).

One learned rotation is a fixed map, so in embedding space two utterances of a speaker stay as alike
after it as before (A-A EER = O-O EER); the paper's OH gets its A-A EER at speech level (HiFi-GAN
resynthesis, an attacker trained on anonymized speech), and VPC 2024's requirement that the pseudo-
speaker be "generated independently for each utterance" (section 2.1.1) is not part of the OHNN it
describes. `voice_target: random-pool-speaker` (vpeval's option, not the paper's) adds a per-voice
reassignment: each voice draws a derangement of the pool speakers and the rotated vector is mapped by
the orthogonal map that best sends every pool speaker onto its assigned one (orthogonal Procrustes
inside the span of the pool speakers' centres, identity outside it). Level `speaker` gives every
utterance of a speaker one assignment; level `utterance` a new one each time. `rotations` > 1 (also
not the paper's) trains several OHNNs, seeded init_seed, init_seed + 1, ...; each voice draws one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Voice
from vpeval.errors import DataError, MissingModelError
from vpeval.speakers import PoolEmbeddings
from vpeval_embedding_anonymizers.base import EmbeddingAnonymizer, PoolParams


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random permutation of range(n) with no fixed point (n >= 2): a cyclic shift of a shuffle."""
    order = rng.permutation(n)
    target = np.empty(n, dtype=np.int64)
    target[order] = np.roll(order, -1)
    return target


class OHNNAnonymizer(EmbeddingAnonymizer):
    """Orthogonal Householder rotation of speaker vectors into pseudo-speaker vectors (OHNN)."""

    name: ClassVar[str] = "ohnn"

    class Params(PoolParams):
        """Training settings of the OHNN; AAM margin/scale are the ECAPA recipe's."""

        reflections: int | None = Field(
            None,
            ge=1,
            le=8192,
            description="Householder reflections K; None = embedding dimension (any rotation reachable).",
        )
        margin: float = Field(
            0.2, ge=0.0, lt=1.5, description="AAM softmax additive angular margin m (radians, below pi/2)."
        )
        scale: float = Field(
            30.0, gt=0.0, le=100.0, description="AAM softmax scale s (float32 logits overflow far above)."
        )
        aam_weight: float = Field(1.0, ge=0.0, le=1000.0, description="Weight of the AAM classification loss.")
        cos_weight: float = Field(
            1.0, ge=0.0, le=1000.0, description="Weight of the cosine similarity to the original."
        )
        epochs: int = Field(300, ge=1, le=100_000, description="Full-batch training steps over the pool vectors.")
        lr: float = Field(0.01, gt=0.0, le=1.0, description="Adam learning rate.")
        rotations: int = Field(
            1, ge=1, le=100, description="Independently seeded OHNNs; each voice draws one from its rng."
        )
        voice_target: Literal["none", "random-pool-speaker"] = Field(
            "none",
            description="'none' (seed 003, section 4.1): the learned rotation alone, one fixed map for every "
            "voice; 'random-pool-speaker' (vpeval's option): each voice (utterance, or speaker at level "
            "speaker) also draws a derangement of the pool speakers from its rng and the rotated vector is "
            "mapped by the orthogonal map that best realises it, so pseudo-speakers differ per voice.",
        )
        init_seed: int | None = Field(
            50,
            ge=0,
            le=2**32 - 1,
            description="Seed of the OHNN's parameter initialisation (seed 003: 50; OHNN k > 0 of a bank takes "
            "init_seed + k); None draws it from the experiment seed.",
        )

    def fit(self, pool: PoolEmbeddings) -> None:
        if len(pool.speaker_ids) < 2:
            raise DataError("ohnn needs a pool with at least two speakers; name a larger pool corpus.")
        self.pool = pool
        self._span = None
        self.models = [self.train_or_load(pool, k) for k in range(self.params.rotations)]

    @property
    def dim(self) -> int:
        return self.pool.embeddings.shape[1]

    def checkpoint_path(self, pool: PoolEmbeddings, index: int):
        digest = hashlib.sha256(np.ascontiguousarray(pool.embeddings).tobytes())
        # Only what training reads: a bigger bank or another voice_target reuses the trained OHNNs.
        digest.update(
            self.params.model_dump_json(
                exclude={"pool", "encoder", "pool_vectors", "rotations", "voice_target"}
            ).encode()
        )
        digest.update(f"{self.context.seed}-{index}".encode())
        return self.context.folder("ohnn") / f"ohnn-{index}-{digest.hexdigest()[:16]}.pt"

    def train_or_load(self, pool: PoolEmbeddings, index: int):
        import torch

        from vpeval_embedding_anonymizers.householder import HouseholderStack

        self.context.apply_threads()
        init = self.params.init_seed
        seed = self.context.torch_seed("ohnn", index) if init is None else init + index
        generator = torch.Generator().manual_seed(seed)
        model = HouseholderStack(self.dim, self.params.reflections or self.dim, generator)
        path = self.checkpoint_path(pool, index)
        state = self.cached_state(path)
        if state is not None:
            model.load_state_dict(state)
        else:
            self.train(model, pool, self.context.rng("ohnn-targets", index))
            torch.save(model.state_dict(), path)
        model.eval()
        return model

    def cached_state(self, path):
        """The state dict this anonymizer cached earlier; None (retrain) when absent or not weights-only."""
        from vpeval.torchload import load_weights_only

        if not path.is_file():
            return None
        try:
            return load_weights_only(path)
        except MissingModelError as exc:
            self.context.log.warning("%s; training it again.", exc)
            return None

    def train(self, model, pool: PoolEmbeddings, rng: np.random.Generator) -> None:
        import torch

        from vpeval_embedding_anonymizers.losses import aam_softmax, cosine_to_original

        x = torch.as_tensor(pool.embeddings)
        centres = torch.as_tensor(pool.speaker_means)
        targets = torch.as_tensor(derangement(len(pool.speaker_ids), rng)[pool.labels])
        optimizer = torch.optim.Adam(model.parameters(), lr=self.params.lr)
        p = self.params
        for _ in self.context.progress(range(p.epochs), total=p.epochs, description="ohnn: train"):
            optimizer.zero_grad()
            y = model(x)
            loss = p.aam_weight * aam_softmax(y, centres, targets, p.margin, p.scale)
            loss = loss + p.cos_weight * cosine_to_original(y, x)
            loss.backward()
            optimizer.step()

    def rotation_matrix(self, index: int = 0) -> np.ndarray:
        """The learned orthogonal matrix M of OHNN `index` (y = M x)."""
        import torch

        self.prepare()
        with torch.no_grad():
            return self.models[index].matrix().numpy()

    def transform(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        import torch

        choice = np.array([int(v.rng.integers(len(self.models))) for v in voices])
        out = np.empty_like(embeddings)
        with torch.no_grad():
            for k, model in enumerate(self.models):
                rows = np.flatnonzero(choice == k)
                if len(rows):
                    out[rows] = model(torch.as_tensor(embeddings[rows])).numpy()
        if self.params.voice_target == "random-pool-speaker":
            out = self.turn_to_voice_targets(out, voices)
        return out

    def speaker_span(self) -> np.ndarray:
        """Orthonormal basis [D, k] of the span of the pool speakers' unit centres."""
        if getattr(self, "_span", None) is None:
            _, sv, vt = np.linalg.svd(unit_rows(self.pool.speaker_means), full_matrices=False)
            self._span = vt[sv > 1e-8 * sv[0]].T
        return self._span

    def voice_rotation(self, voice: Voice) -> np.ndarray:
        """[k, k] orthogonal map (in speaker_span coordinates) that sends every pool speaker's centre as
        close as an orthogonal map can to another pool speaker's: a derangement drawn from the voice's
        rng, fitted by orthogonal Procrustes."""
        from scipy.linalg import orthogonal_procrustes

        centres = unit_rows(self.pool.speaker_means) @ self.speaker_span()
        targets = centres[derangement(len(centres), voice.rng)]
        rotation, _ = orthogonal_procrustes(centres, targets)
        return rotation

    def turn_to_voice_targets(self, rotated: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        """Each voice's rotated rows mapped by that voice's pool-speaker derangement (rows sharing a key,
        level speaker, share it); the part of a vector outside the pool speakers' span is unchanged."""
        span = self.speaker_span()
        out = rotated.copy()
        keys = [v.key for v in voices]
        for key in dict.fromkeys(keys):
            rows = [i for i, k in enumerate(keys) if k == key]
            inside = rotated[rows] @ span
            out[rows] += (inside @ self.voice_rotation(voices[rows[0]]) - inside) @ span.T
        return out


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
