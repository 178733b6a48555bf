"""Hook implementations only; models load on first encode, never at import."""

from vpeval import hookimpl


@hookimpl
def register_frontends(register):
    from vpeval_ssl_frontends.frontend import HubertFrontend, Wav2Vec2Frontend, WavLMFrontend

    register(WavLMFrontend)
    register(HubertFrontend)
    register(Wav2Vec2Frontend)
