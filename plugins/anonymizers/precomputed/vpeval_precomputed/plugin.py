"""Entry point: registers the precomputed anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_precomputed.anonymizer import Precomputed

    register(Precomputed)
