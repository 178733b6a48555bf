"""vpeval.memory: freed large blocks stay in the process, so a second batch faults no pages in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROUNDS = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    if sys.argv[1] == "reuse":
        from vpeval.memory import reuse_freed_memory
        assert reuse_freed_memory()
    def batch():
        # five 20 MB temporaries alive together, then freed: a batched forward's pattern
        blocks = [np.ones(5 * 1024 * 1024, dtype=np.float32) for _ in range(5)]
        del blocks
    batch()  # the first batch faults its pages in either way
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        batch()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def _faults_after_first_batch(mode: str) -> int:
    # 4 KiB pages: numpy asks for huge pages on large arrays, which would count one fault per 2 MiB
    env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "0"}
    done = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, check=True, env=env)
    return int(done.stdout.strip())


def _huge_pages_always() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as setting:
            return "[always]" in setting.read()
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
@pytest.mark.skipif(_huge_pages_always(), reason="the kernel backs every large block with 2 MiB pages")
def test_later_batches_reuse_the_memory_the_first_one_freed():
    default, reused = _faults_after_first_batch("default"), _faults_after_first_batch("reuse")
    pages = 3 * 100 * 1024 * 1024 // 4096  # what three batches would fault in with nothing kept
    assert default > pages // 4, "glibc's defaults should hand these blocks back (the test's premise)"
    assert reused < pages // 50


def test_it_is_set_once_and_reports_the_same_answer():
    from vpeval.memory import reuse_freed_memory

    assert reuse_freed_memory() is reuse_freed_memory()
