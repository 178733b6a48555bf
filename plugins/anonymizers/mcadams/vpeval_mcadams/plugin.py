"""Entry point: registers the McAdams anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_mcadams.anonymizer import McAdams

    register(McAdams)
