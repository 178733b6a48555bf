"""The anonymizer and encoder contract suites on the tiny release, a dummy pool and selection."""

from sslsas_testing import shared

from vpeval.testing.contracts import AnonymizerContract, EncoderContract

RELEASE, POOL = shared()


class TestSslSasContract(AnonymizerContract):
    plugin_name = "ssl-sas"
    params = {
        "model": RELEASE,
        "pool": POOL,
        "anonymizer": "selection",
        "anonymizer_params": {"farthest": 2, "select": 2},
    }


class TestSslSasEcapaContract(EncoderContract):
    plugin_name = "ssl-sas-ecapa"
    params = {"model": RELEASE}
