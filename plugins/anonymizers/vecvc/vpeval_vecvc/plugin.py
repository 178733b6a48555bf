"""Entry point: registers the vector-vc anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_vecvc.anonymizer import VectorVC

    register(VectorVC)
