"""The anonymizer contract suite on a dummy pool with the packaged GE2E encoder."""

import tempfile
from pathlib import Path

from vpeval.testing.contracts import AnonymizerContract
from vpeval.testing.dummies import write_pool_manifest

POOL = {"use": "manifest", "params": {"path": write_pool_manifest(Path(tempfile.mkdtemp(prefix="vpeval-vecvc-")))}}


class TestVectorVCContract(AnonymizerContract):
    plugin_name = "vector-vc"
    params = {
        "pool": POOL,
        "anonymizer": "selection",
        "anonymizer_params": {"farthest": 2, "select": 2},
        "refine_steps": 1,
    }
