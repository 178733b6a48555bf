"""`vpeval cache` (sizes, prune) and `vpeval validate --plan`: the logic behind those commands of the core's CLI."""

from vpeval_cacheadmin.cli import cache_command
from vpeval_cacheadmin.entries import scan, sizes_text
from vpeval_cacheadmin.plan import plan_text, planned_steps
from vpeval_cacheadmin.prune import parse_age, prune, select

__all__ = ["cache_command", "parse_age", "plan_text", "planned_steps", "prune", "scan", "select", "sizes_text"]
