"""Entry point: registers the world-shift anonymizer."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_world_shift.anonymizer import WorldShift

    register(WorldShift)
