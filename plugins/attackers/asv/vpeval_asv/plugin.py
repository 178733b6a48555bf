"""Entry point: registers the ecapa and xvector attackers and the encoders that load their checkpoints."""

from vpeval import hookimpl


@hookimpl
def register_attackers(register):
    from vpeval_asv.attacker import EcapaAttacker, XvectorAttacker

    register(EcapaAttacker)
    register(XvectorAttacker)


@hookimpl
def register_encoders(register):
    from vpeval_asv.encoders import EcapaEncoder, XvectorEncoder

    register(EcapaEncoder)
    register(XvectorEncoder)
