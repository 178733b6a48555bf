"""Entry point: registers the poolvc anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_poolvc.anonymizer import PoolVC

    register(PoolVC)
