"""Entry point: registers the identification metric (numpy and scipy only)."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_identification.metric import Identification

    register(Identification)
