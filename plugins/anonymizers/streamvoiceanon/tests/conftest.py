"""Fixtures: a tiny published-layout folder (vpeval_streamvoiceanon.tiny) and its loaded pipeline."""

from __future__ import annotations

import pytest

from vpeval_streamvoiceanon.tiny import write_checkpoints, write_configs


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """(model_dir, config_dir) of a tiny published-layout folder."""
    root = tmp_path_factory.mktemp("sva")
    configs = write_configs(root / "configs" / "hydra_arcs")
    models = write_checkpoints(root / "pretrained_checkpoints", configs)
    return models, configs


@pytest.fixture(scope="session")
def pipeline(tiny):
    from vpeval_streamvoiceanon.pipeline import Pipeline

    models, configs = tiny
    return Pipeline.load(str(models), str(configs))
