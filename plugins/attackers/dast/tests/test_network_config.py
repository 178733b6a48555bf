"""A network shape saved in config.json by earlier dast versions still reads back, and is written the same."""

import json

from vpeval_dast.model import NetworkConfig

# The "network" entry of a config.json as dast wrote it (json.dumps, indent=2)
# before NetworkConfig used vpeval_torch.json_config.
SAVED = (
    '{"fusion": "mid", "n_mels": 24, "ssl_layers": 3, "ssl_dim": 16, "channels": [32, 32, 32, 32, 96],'
    ' "attention_channels": 16, "embedding_dim": 20}'
)
CONFIG = NetworkConfig("mid", 24, 3, 16, (32, 32, 32, 32, 96), 16, 20)


def test_a_saved_network_config_reads_back_equal_and_is_written_the_same():
    back = NetworkConfig.from_json(json.loads(SAVED))
    assert back == CONFIG and isinstance(back.channels, tuple)
    assert json.dumps(CONFIG.to_json(), indent=2) == json.dumps(json.loads(SAVED), indent=2)  # its file
