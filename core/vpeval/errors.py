"""Errors a user can cause. Each carries one sentence that says what is wrong and what to do.

The CLI turns any `UserError` into that sentence on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input (files, experiment, plugins, models), not a bug in vpeval."""

    exit_code = 2


class ConfigError(UserError):
    """The experiment file is invalid (YAML syntax, schema or a plugin's parameters)."""


class PluginError(UserError):
    """A plugin is unknown, broken, or registered twice."""


class BadAudioError(UserError):
    """An audio file is unreadable, empty or corrupt."""

    def __init__(self, path: str, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"Audio file {self.path} cannot be used: {reason}.")


class DataError(UserError):
    """A data folder, manifest or trial list is malformed."""


class MissingModelError(UserError):
    """A model a plugin needs is not where the user said, or its package is not installed."""


class MetricInputError(UserError):
    """Scores or labels a metric cannot work with (one class only, NaN, all equal)."""
