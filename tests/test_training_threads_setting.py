"""Trainings' torch threads follow the experiment file, never the machine: `workers` joins them only where the
experiment names it (its default is every core, and a kernel's sums depend on its thread count)."""

import pytest

from vpeval.api import PluginContext
from vpeval.run.run_state import training_threads
from vpeval.schema import Experiment


def settings(**fields):
    base = {"name": "t", "data": {"corpus": {"use": "synth"}}, "protocols": ["O-O"]}
    return Experiment.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({}, 1), ({"threads": 3}, 3), ({"workers": 2}, 2), ({"workers": 2, "threads": 4}, 4), ({"workers": 1}, 1)],
)
def test_training_threads_come_from_the_file(fields, expected):
    exp = settings(**fields)
    assert training_threads(exp) == expected


def test_the_default_workers_do_not_reach_training():
    exp = settings()
    exp.__dict__["workers"] = 16  # as the default on a 16-core machine: set, but not named in the file
    assert "workers" not in exp.model_fields_set and training_threads(exp) == 1


def test_children_keep_the_training_threads():
    assert PluginContext(training_threads=3).child("x").training_threads == 3
