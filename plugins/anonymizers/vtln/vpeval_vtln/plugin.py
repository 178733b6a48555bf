"""Entry point: registers the vtln anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_vtln.anonymizer import VTLN

    register(VTLN)
