"""Entry point: registers the `dask` executor. distributed is imported only when a run uses it."""

from vpeval import hookimpl


@hookimpl
def register_executors(register):
    from vpeval_dask.executor import DaskExecutor

    register(DaskExecutor)
