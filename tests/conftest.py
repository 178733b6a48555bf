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


def settle_lazy_modules() -> None:
    """Give `__file__ = None` to modules whose attribute look-up raises (speechbrain's LazyModule for an
    integration whose dependency, such as k2, is not installed).

    Hypothesis reads `getattr(module, "__file__", None)` of every loaded module to collect constants,
    and that look-up imports the lazy target; its ImportError would end the session (or the test).
    """
    for module in list(sys.modules.values()):
        try:
            getattr(module, "__file__", None)
        except Exception:
            module.__dict__["__file__"] = None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    settle_lazy_modules()  # before hypothesis's own hook looks at every module


@pytest.fixture
def settled_modules():
    """For hypothesis tests: modules loaded by earlier tests are settled too."""
    settle_lazy_modules()
