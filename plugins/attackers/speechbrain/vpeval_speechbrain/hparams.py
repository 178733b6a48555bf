"""A SpeechBrain hyperparams.yaml read as inert data: the shared reader of vpeval-sbfolder.

No tag of the file ever names, imports or runs Python: every `!tag` is a `Tagged` record, `!ref` resolves to
plain values only, and the size and alias caps refuse a hostile file in one sentence. build.py decides,
from this plugin's allow-list, which records become speechbrain modules.
"""

from __future__ import annotations

from vpeval_sbfolder.hparams import MAX_BYTES, MAX_VALUES, PLAIN, HyperParams, Tagged

__all__ = ["MAX_BYTES", "MAX_VALUES", "PLAIN", "HyperParams", "Tagged"]
