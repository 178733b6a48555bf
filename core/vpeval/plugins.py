"""What scripts, tests and plugins import to find and make plugins: the registry (vpeval.registry) and
`plugin_context`, a context whose `get` makes plugins from it (vpeval.build)."""

from vpeval.build import plugin_context
from vpeval.registry import LOAD_ENV, PluginManager, get_plugin_manager, unknown_kind_message

__all__ = ["LOAD_ENV", "PluginManager", "get_plugin_manager", "plugin_context", "unknown_kind_message"]
