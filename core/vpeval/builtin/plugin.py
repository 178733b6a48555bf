"""Plugins that ship with the core: data sources for the formats users already have, and the local executor.

They are registered like any other plugin (distribution `vpeval`), so the core itself names no method.
"""

from __future__ import annotations

from vpeval.hookspecs import hookimpl


@hookimpl
def register_corpora(register):
    from vpeval.builtin.sources import KaldiCorpus, ManifestCorpus, VoicePrivacyCorpus

    register(ManifestCorpus)
    register(KaldiCorpus)
    register(VoicePrivacyCorpus)


@hookimpl
def register_executors(register):
    from vpeval.builtin.local_executor import LocalProcesses

    register(LocalProcesses)
