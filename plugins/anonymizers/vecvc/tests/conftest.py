"""Shared fixtures: a small synth pool, held-out synth speakers, a prepared vector-vc."""

from __future__ import annotations

import pytest

from vpeval.plugins import plugin_context
from vpeval.speakers import POOL_SEED

# 6 pool speakers x 2 utterances; the held-out speakers come from the tiny preset under another seed.
SYNTH_POOL = {"use": "synth", "params": {"preset": "tiny", "speakers": 6, "utterances": 2, "seed": POOL_SEED}}
HELD_OUT = {"preset": "tiny", "speakers": 4, "utterances": 1, "seed": 5}
# B1's rule scaled to the small pool: average the 2 farthest same-gender pool speakers.
SELECTION = {"farthest": 2, "select": 2}


@pytest.fixture(scope="session")
def context(tmp_path_factory):
    return plugin_context(seed=0, work_dir=tmp_path_factory.mktemp("vecvc-work"))


@pytest.fixture(scope="session")
def held_out(context):
    return context.get("corpus", "synth", dict(HELD_OUT)).load().utterances


@pytest.fixture(scope="session")
def make(context):
    from vpeval_vecvc.anonymizer import VectorVC

    made = {}

    def build(**params):
        key = repr(sorted(params.items()))
        if key not in made:
            full = {"anonymizer": "selection", "anonymizer_params": SELECTION, "pool": SYNTH_POOL, **params}
            made[key] = VectorVC(VectorVC.Params.model_validate(full), context)
            made[key].prepare()
        return made[key]

    return build
