"""The semi-informed attacker's recipes are the toolkits' current ones (issue 36, item 4): vpeval's defaults
for VPC 2024 and 2026 Track 1 (the speechbrain attacker's RECIPES and parameters, the trainers' constants, the
shipped experiments' variables) equal the values in tests/data/vpc_toolkit_recipes.json, read from the
toolkits' configs at the commits it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOOLKIT = json.loads((ROOT / "tests" / "data" / "vpc_toolkit_recipes.json").read_text())
EXPERIMENTS = {
    "vpc2024": ROOT / "experiments" / "vpc2024.yaml",
    "vpc2026-track1": ROOT / "experiments" / "vpc2026-track1.yaml",
}


@pytest.mark.parametrize("recipe", ["vpc2024", "vpc2026-track1"])
def test_the_attackers_recipe_is_the_toolkits(recipe):
    pytest.importorskip("speechbrain")
    from vpeval_speechbrain.params import RECIPES, SpeechBrainTrainParams

    toolkit = TOOLKIT[recipe]
    mine = RECIPES[recipe]
    assert (mine["start"], mine["epochs"], mine["batch_size"], mine["lr"]) == (
        toolkit["start"], toolkit["epochs"], toolkit["batch_size"], toolkit["lr"],
    )  # fmt: skip
    assert mine["optimizer"] == toolkit["optimizer"].lower()
    params = SpeechBrainTrainParams(source="exp/asv_orig", recipe=recipe)
    assert params.crop_seconds == toolkit["sentence_len"]
    assert (params.margin, params.scale) == (toolkit["margin"], toolkit["scale"])
    assert params.cyclic_step_size == toolkit["step_size"]
    assert [params.recipe_value(k) for k in ("epochs", "batch_size", "lr")] == [
        toolkit["epochs"], toolkit["batch_size"], toolkit["lr"],
    ]  # fmt: skip


def test_the_trainers_constants_are_the_toolkits():
    pytest.importorskip("speechbrain")
    from vpeval_asv.params import EcapaParams
    from vpeval_speechbrain import ssl_training

    ecapa = EcapaParams()  # the trainer VPC 2024's from-scratch recipe uses
    assert (ecapa.base_lr, ecapa.weight_decay) == (TOOLKIT["vpc2024"]["base_lr"], TOOLKIT["vpc2024"]["weight_decay"])
    assert ecapa.lr_schedule == "cyclic"
    assert (ssl_training.BASE_LR, ssl_training.WEIGHT_DECAY) == (
        TOOLKIT["vpc2026-track1"]["base_lr"], TOOLKIT["vpc2026-track1"]["weight_decay"],
    )  # fmt: skip


@pytest.mark.parametrize("recipe", ["vpc2024", "vpc2026-track1"])
def test_the_shipped_experiments_use_the_recipe_unchanged(recipe):
    toolkit = TOOLKIT[recipe]
    experiment = yaml.safe_load(EXPERIMENTS[recipe].read_text())
    variables = experiment["variables"]
    assert (variables["EPOCHS"], variables["BATCH"], variables["CROP"]) == (
        toolkit["epochs"], toolkit["batch_size"], toolkit["sentence_len"],
    )  # fmt: skip
    (semi,) = [a for a in experiment["attackers"] if a.get("train_on") == "anonymized"]
    assert semi["params"]["recipe"] == recipe
    assert semi["params"].get("lr", toolkit["lr"]) == toolkit["lr"]
    for name in ("margin", "scale", "cyclic_step_size", "start"):
        assert name not in semi["params"]  # the recipe's values, not the file's
