"""The anonymizer contract suite on the tiny release, a dummy pool and the selection anonymizer."""

import csv
import tempfile
from pathlib import Path

from sslsas_testing import write_release

from vpeval.testing.contracts import AnonymizerContract, EncoderContract
from vpeval.testing.dummies import make_corpus


def write_pool(folder: Path) -> str:
    corpus = make_corpus(folder, speakers=4, utterances=2, sample_rate=16000, seconds=1.0, seed=123, name="pool")
    manifest = folder / "pool.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript", "emotion"])
        for u in corpus.utterances:
            writer.writerow([u.path, "pool-" + u.speaker, u.gender, u.transcript, u.emotion])
    return str(manifest)


FOLDER = Path(tempfile.mkdtemp(prefix="vpeval-sslsas-"))
RELEASE = str(write_release(FOLDER / "pretrained_models_anon_xv"))
POOL = {"use": "manifest", "params": {"path": write_pool(FOLDER)}}


class TestSslSasContract(AnonymizerContract):
    plugin_name = "ssl-sas"
    params = {"model": RELEASE, "pool": POOL, "anonymizer": "selection", "anonymizer_params": {"farthest": 2, "select": 2}}


class TestSslSasEcapaContract(EncoderContract):
    plugin_name = "ssl-sas-ecapa"
    params = {"model": RELEASE}
