"""`vpeval metrics --scores FILE`: any installed score metric on a score file from any toolkit."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from pydantic import ValidationError

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import ConfigError, MetricInputError
from vpeval.types import MetricResult

DEFAULT_METRICS = ["eer-step", "eer-rocch", "min-dcf", "min-cllr", "cllr", "linkability"]


def run_metrics_on_scores(path: str, metric_names: list[str] | None, as_json: bool, bootstrap: int = 0) -> str:
    """Compute the named metrics (default: the EER, minDCF, Cllr and linkability family) on a score file.

    Metrics are looked up through the plugin manager, so third-party score metrics work too. `bootstrap`
    sets the replicates of metrics that have a `bootstrap` parameter (0: no confidence intervals, which
    keeps a million trials to seconds).
    """
    from vpeval.params import validate_params
    from vpeval.plugins import get_plugin_manager
    from vpeval.scorefile import read_score_file

    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ConfigError(
            f"--bootstrap is {bootstrap}; give 0 (no confidence intervals) or a positive number of replicates, "
            "such as 1000."
        )
    scores = read_score_file(path)
    manager = get_plugin_manager()
    results: list[MetricResult] = []
    for name in metric_names or DEFAULT_METRICS:
        cls = manager.get("metric", name)
        if cls.needs != "scores":
            raise MetricInputError(
                f"Metric {name} reads {cls.needs}, not verification scores, so it cannot run on a score file."
            )
        params = {"bootstrap": bootstrap} if "bootstrap" in cls.Params.model_fields else {}
        try:
            checked = validate_params(cls, params)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"] if exc.errors() else str(exc)
            raise ConfigError(
                f"Metric {name} refuses --bootstrap {bootstrap}: {reason[0].lower() + reason[1:]}."
            ) from None
        metric = cls(checked, PluginContext())
        try:
            results += metric.compute(MetricInputs(scores=scores, attributes={"scores": str(path)}))
        except MetricInputError as exc:  # the metric speaks of "the trials": say which file holds them
            raise MetricInputError(f"Score file {path}: {exc}") from None
    if as_json:
        return json.dumps([_jsonable(asdict(r)) for r in results], indent=2)
    return format_table(results, header=f"{path}: {len(scores)} trials ({int(scores.targets.sum())} target)")


def format_table(results: list[MetricResult], header: str = "") -> str:
    """A plain aligned table: metric, gender, value, [CI,] unit, key details."""
    with_ci = any(r.ci_low is not None for r in results)
    ci_title = f"{100 * _confidence(results):g}% CI"
    rows = [("metric", "gender", "value") + ((ci_title,) if with_ci else ()) + ("unit", "details")]
    for r in results:
        ci = "" if r.ci_low is None or r.ci_high is None else f"[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
        rows.append((r.metric, r.gender, _fmt(r.value)) + ((ci,) if with_ci else ()) + (r.unit, _details(r.details)))
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = [header] if header else []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _confidence(results: list[MetricResult]) -> float:
    for r in results:
        boot = r.details.get("bootstrap")
        if isinstance(boot, dict):
            return float(boot.get("confidence", 0.95))
    return 0.95


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    # fixed point in the usual range; exponents for tiny and huge values (a 1e308 threshold is 309 digits)
    return f"{x:.4f}" if 1e-3 <= abs(x) < 1e9 or x == 0 else f"{x:.3e}"


def _details(details: dict) -> str:
    parts = []
    for key, value in details.items():
        if key == "bootstrap":
            continue
        parts.append(f"{key}={_fmt(value) if isinstance(value, float) else value}")
    return " ".join(parts)


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _jsonable(value.item())
    return value
