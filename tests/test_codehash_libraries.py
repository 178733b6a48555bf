"""A plugin's code key names the vpeval libraries its distribution requires (vpeval.codehash), found without reading
every installed distribution's file list (metadata.packages_distributions: 0.15 s of each run, issue 39)."""

import re
import subprocess
import sys
from importlib import metadata

import pytest

from vpeval import codehash

# The libraries of some installed plugins, each as packages_distributions finds them.
DISTRIBUTIONS = ["vpeval-speechbrain", "vpeval-speech-metrics", "vpeval-poolvc", "vpeval-scoring-metrics"]


def by_packages_distributions(distribution: str) -> list[str]:
    requires = [r for r in metadata.distribution(distribution).requires or [] if "extra ==" not in r]
    names = {re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requires}
    wanted = {name for name in names if name.startswith("vpeval-")}
    owners = metadata.packages_distributions()
    return sorted(p for p, dists in owners.items() if any(d.lower().replace("_", "-") in wanted for d in dists))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_the_libraries_are_those_packages_distributions_names(distribution):
    assert codehash._library_packages(distribution) == by_packages_distributions(distribution)


def test_no_other_distributions_file_list_is_read():
    code = (
        "from importlib import metadata\n"
        "def refuse():\n    raise AssertionError('packages_distributions reads every distribution')\n"
        "metadata.packages_distributions = refuse\n"
        "from vpeval import codehash\n"
        f"print([codehash._library_packages(d) for d in {DISTRIBUTIONS!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == str([by_packages_distributions(d) for d in DISTRIBUTIONS])
