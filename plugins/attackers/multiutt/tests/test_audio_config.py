"""An audio network shape saved in config.json by earlier multiutt versions still reads back, and is
written the same."""

import json

from vpeval_multiutt.audio_model import AudioConfig

# The "audio" entry of a config.json as multiutt wrote it (json.dumps, indent=2)
# before AudioConfig used vpeval_torch.json_config.
SAVED = '{"frame_dim": 24, "channels": [32, 32, 32, 32, 96], "attention_channels": 16, "embedding_dim": 20}'
CONFIG = AudioConfig(frame_dim=24, channels=(32, 32, 32, 32, 96), attention_channels=16, embedding_dim=20)


def test_a_saved_audio_config_reads_back_equal_and_is_written_the_same():
    back = AudioConfig.from_json({**json.loads(SAVED), "written_by": "a later version"})  # extra keys: ignored
    assert back == CONFIG and isinstance(back.channels, tuple)
    assert json.dumps(CONFIG.to_json(), indent=2) == json.dumps(json.loads(SAVED), indent=2)  # its file
