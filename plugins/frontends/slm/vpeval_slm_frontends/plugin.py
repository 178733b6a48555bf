"""Hook implementations only; models load on first encode, never at import."""

from vpeval import hookimpl


@hookimpl
def register_frontends(register):
    from vpeval_slm_frontends.higgs import HiggsFrontend
    from vpeval_slm_frontends.kimi import KimiFrontend
    from vpeval_slm_frontends.mimi import MimiFrontend
    from vpeval_slm_frontends.qwen import QwenFrontend

    register(MimiFrontend)
    register(HiggsFrontend)
    register(KimiFrontend)
    register(QwenFrontend)
