"""Hook implementations only; the classes are imported when registered and load models lazily."""

from vpeval import hookimpl


@hookimpl
def register_frontends(register):
    from vpeval_cpu_frontends.fbank_rvq import FbankRvqFrontend
    from vpeval_cpu_frontends.kimi_like import KimiLikeFrontend

    register(KimiLikeFrontend)
    register(FbankRvqFrontend)
