"""Entry point: registers the ssl-sas anonymizer and the ssl-sas-ecapa speaker encoder."""

from vpeval import hookimpl


@hookimpl
def register_anonymizers(register):
    from vpeval_sslsas.anonymizer import SslSas

    register(SslSas)


@hookimpl
def register_encoders(register):
    from vpeval_sslsas.ecapa import SslSasEcapa

    register(SslSasEcapa)
