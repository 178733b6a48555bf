"""What the scripts that record a VoicePrivacy toolkit's outputs into a test fixture share
(scripts/vpc_toolkit_training_reference.py, scripts/vpc_toolkit_evaluation_reference.py): the 2024 checkout
argument, loading the test module whose functions run the toolkit, and writing the fixture."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1] / "tests"


def toolkit_arguments(description: str) -> argparse.ArgumentParser:
    """A parser taking the Voice-Privacy-Challenge-2024 checkout and its --commit (written into the fixture)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("toolkit", type=Path, help="a checkout of Voice-Privacy-Challenge-2024")
    parser.add_argument("--commit", default="400de3a", help="the checkout's commit, written into the fixture")
    return parser


def load_test_module(name: str) -> ModuleType:
    """tests/<name>.py as a module, with tests/ on sys.path as tests/conftest.py puts it (for its helper modules)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    spec = importlib.util.spec_from_file_location(name, TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_fixture(path: Path, record: dict) -> None:
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")
