import importlib.util
import sys
from pathlib import Path

import cloudpickle
import pytest


@pytest.fixture
def tiny_plugins():
    """tiny_plugins.py registered in this process's plugin manager (loaded by path: tests are not a package)."""
    from vpeval.plugins import get_plugin_manager

    spec = importlib.util.spec_from_file_location(
        "vpeval_dask_tiny_plugins", Path(__file__).with_name("tiny_plugins.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the config hashes a plugin's source through its module
    spec.loader.exec_module(module)
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-dask-tests", "0.0", name="vpeval-dask-tests:tiny")
    yield module
    manager.unregister_module(module)


@pytest.fixture(scope="session")
def cluster():
    """One LocalCluster of 2 worker processes for all the dask tests (starting one takes seconds)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield local


@pytest.fixture(scope="module", autouse=True)
def tasks_by_value(request):
    """Functions defined in a test module travel by value: the workers need not import the test module."""
    module = sys.modules[request.module.__name__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


@pytest.fixture
def own_cluster():
    """A LocalCluster of 2 worker processes for one test that kills every worker (the session's cluster
    stays whole for the others)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        with Client(local.scheduler_address) as client:
            client.wait_for_workers(2, timeout=60)
        yield local


def executors_on(cluster):
    """Makes dask executors on `cluster`; after the test, closes their clients and waits until the
    cluster has its 2 workers again (a test that killed one leaves the next test a whole cluster)."""
    from distributed import Client

    from vpeval.api import PluginContext
    from vpeval_dask.executor import DaskExecutor

    made = []

    def make(cache_root: Path | None = None, workers: int = 1, threads: int = 1, **params) -> DaskExecutor:
        options = {} if cache_root is None else {"cache_root": cache_root}
        made.append(
            DaskExecutor(
                DaskExecutor.Params(address=cluster.scheduler_address, **params),
                PluginContext(workers=workers, threads=threads, options=options),
            )
        )
        return made[-1]

    yield make
    for dask in made:
        dask.close()
    with Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=60)


@pytest.fixture
def executor(cluster):
    """Dask executors on the session's cluster."""
    yield from executors_on(cluster)


@pytest.fixture
def own_executor(own_cluster):
    """Dask executors on a cluster of this test's own."""
    yield from executors_on(own_cluster)
