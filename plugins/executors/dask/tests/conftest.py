import importlib.util
import sys
from pathlib import Path

import pytest


@pytest.fixture
def tiny_plugins():
    """tiny_plugins.py registered in this process's plugin manager (loaded by path: tests are not a package)."""
    from vpeval.plugins import get_plugin_manager

    spec = importlib.util.spec_from_file_location("vpeval_dask_tiny_plugins", Path(__file__).with_name("tiny_plugins.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the config hashes a plugin's source through its module
    spec.loader.exec_module(module)
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-dask-tests", "0.0", name="vpeval-dask-tests:tiny")
    yield module
    manager.unregister_module(module)
