"""The repository's test collection: every slow test of a plugin is a research behaviour test.

The research plugins' slow tests (an attacker beating chance after real training, a paper's ordering on
tiny data) guard every landing: .ci/run runs `-m research` after the default suite. Slow tests of the
core (tests/: every shipped experiment run end to end, about 50 minutes) stay out of CI.
"""

from pathlib import Path

import pytest

PLUGINS = Path(__file__).parent / "plugins"


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("slow") and PLUGINS in Path(item.path).parents:
            item.add_marker(pytest.mark.research)
