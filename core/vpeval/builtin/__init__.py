"""The plugins that ship with the core: the `manifest` and `kaldi` corpus sources (sources) and the `local`
executor (local_executor), registered by `plugin` like any installed plugin (distribution `vpeval`).

Only vpeval.registry loads them (import vpeval.builtin.plugin); nothing below this package imports it.
"""
