"""Entry point: registers the campplus and eres2net encoders."""

from vpeval import hookimpl


@hookimpl
def register_encoders(register):
    from vpeval_3dspeaker.encoder import CampplusEncoder, ERes2NetEncoder

    register(CampplusEncoder)
    register(ERes2NetEncoder)
