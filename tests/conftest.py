import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def fake_plugins():
    """The fake plugins of tests/fakes.py registered in the process-wide plugin manager."""
    import fakes

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    fakes.CALLS.update({"anonymize": 0, "train": 0})
    yield fakes
    manager.unregister_module(fakes)
