"""The anonymizer contract suite for selection, ohnn and emotion-compensation on a synthetic pool."""

import tempfile
from pathlib import Path

import numpy as np

from vpeval.testing.contracts import AnonymizerContract
from vpeval_embedding_anonymizers.synthetic import synthetic_embeddings

_x, _speakers, _emotions = synthetic_embeddings(12, 8, seed=11, dim=16)
POOL = str(Path(tempfile.mkdtemp(prefix="vpeval-emb-contract-")) / "pool.npz")
np.savez(POOL, embeddings=_x, speakers=_speakers, emotions=_emotions)


class TestSelectionContract(AnonymizerContract):
    plugin_name = "selection"
    params = {"pool_vectors": POOL, "farthest": 6, "select": 3}


class TestOHNNContract(AnonymizerContract):
    plugin_name = "ohnn"
    params = {"pool_vectors": POOL, "epochs": 40}


class TestEmotionCompensationContract(AnonymizerContract):
    plugin_name = "emotion-compensation"
    params = {"pool_vectors": POOL, "emotion_vectors": POOL, "base_params": {"epochs": 40}}
