"""The experiment's `report:` section: the paper's tables, swept curves and findings, declared in YAML.

A research experiment names which results make up the paper's tables (rows and columns among the result
coordinates), which curves to draw (a swept quantity read from labels) and which findings to check
(comparisons between groups of results), so that report.md prints them and says whether each finding
holds. Nothing here enters a cache key: changing the section and rerunning only rewrites the report.
A light module (pydantic only), loaded with the experiment: it sits beside config.py, below the report
package that reads it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from vpeval.settings import StrictModel

# dataset: the evaluation set of a run with several (VoicePrivacy's libri_dev, libri_test); not checked at
# validate, since the corpus names its sets only when it loads.
Coordinate = Literal["anonymizer", "attacker", "scenario", "protocol", "n", "gender", "dataset"]
Value = str | int | float
OPERATORS = ("<", "<=", ">", ">=", "~")


def _listed(value):
    """A single value is a list of one; numbers and strings compare as printed (`n: 5` matches N = 5)."""
    values = value if isinstance(value, list) else [value]
    return [str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in values]


Values = Annotated[list[str], BeforeValidator(_listed)]
Where = dict[Coordinate, Values]


def _distinct_dims(dims: list[str]) -> list[str]:
    repeated = sorted({d for d in dims if dims.count(d) > 1})
    if repeated:
        raise ValueError(f"{repeated[0]} is named twice; name each coordinate once")
    return dims


Dims = Annotated[list[Coordinate], AfterValidator(_distinct_dims)]


class TableSpec(StrictModel):
    title: str = Field(description="the table's heading in report.md, e.g. 'Table I: EER (%) of the audio systems'")
    metric: str = Field(default="eer", description="the result metric the cells show (results.json `metric`)")
    rows: Dims = Field(default_factory=lambda: ["attacker"], description="coordinates down the rows")
    columns: Dims = Field(default_factory=lambda: ["protocol"], description="coordinates across the columns")
    where: Where = Field(default_factory=dict, description="keep only results whose coordinates take these values")
    best: Literal["higher", "lower", "none"] | None = Field(
        default=None,
        description="which value per column is marked (higher, lower); default: by the rows' role, the best "
        "system among systems and the strongest attacker (lowest EER) among attackers",
    )

    @model_validator(mode="after")
    def _disjoint(self) -> TableSpec:
        both = sorted(set(self.rows) & set(self.columns))
        if both:
            raise ValueError(f"{both[0]} is in both rows and columns; put it in one of them")
        return self


class CurveSpec(StrictModel):
    title: str = Field(description="the figure's heading, e.g. 'Figure 2: EER against the share of target data'")
    metric: str = "eer"
    x: Coordinate | dict[Coordinate, dict[str, float]] = Field(
        description="the swept quantity: `n`, or a map from one coordinate's values (labels) to numbers, "
        "e.g. {attacker: {dast-5: 5, dast-10: 10}}"
    )
    xlabel: str = Field(default="", description="the x axis label (default: the coordinate)")
    xscale: Literal["linear", "log"] = "linear"
    series: Coordinate = Field(default="anonymizer", description="one line per value of this coordinate")
    panels: Coordinate | None = Field(
        default="protocol", description="one panel per value of this coordinate (none: one panel)"
    )
    where: Where = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_sweep(self) -> CurveSpec:
        if isinstance(self.x, dict) and len(self.x) != 1:
            raise ValueError("x maps the values of exactly one coordinate to numbers, e.g. {attacker: {a: 5, b: 10}}")
        if self.x_dim in (self.series, self.panels):
            raise ValueError(
                f"{self.x_dim} is both the swept x and the series or panels; choose another series or panels"
            )
        return self

    @property
    def x_dim(self) -> str:
        return self.x if isinstance(self.x, str) else next(iter(self.x))


class Delta(StrictModel):
    delta: Annotated[list[Where], Field(min_length=2, max_length=2)] = Field(
        description="two selections: the side's value is mean(first) - mean(second), "
        "e.g. the EER drop from N = 5 to N = 15"
    )


Side = Delta | Where


class FindingSpec(StrictModel):
    claim: str = Field(description="the paper's finding in one sentence, printed with HOLDS or DOES NOT HOLD")
    metric: str = "eer"
    left: Side
    op: Literal["<", "<=", ">", ">=", "~"] = Field(description="left op right; `~`: |left - right| <= tolerance")
    right: Side
    tolerance: float = Field(default=0.0, ge=0, description="for `~`: how close counts as close, in the metric's unit")
    where: Where = Field(default_factory=dict, description="applies to both sides")
    per: Dims = Field(
        default_factory=list,
        description="check the finding in each group of these coordinates; it holds when it holds in every group",
    )

    @model_validator(mode="after")
    def _tolerance_with_close(self) -> FindingSpec:
        if self.op == "~" and self.tolerance == 0:
            raise ValueError("op `~` (close to) needs a tolerance > 0 in the metric's unit, e.g. tolerance: 2.0")
        return self


class ReportSpec(StrictModel):
    preset: Literal["vpc"] | None = Field(
        None,
        description="vpc: also the VoicePrivacy toolkits' results summary (results_vpc.txt and a report.md "
        "section: EER by dataset, split, gender and trial condition; WER; UAR)",
    )
    tables: list[TableSpec] = Field(default_factory=list)
    curves: list[CurveSpec] = Field(default_factory=list)
    findings: list[FindingSpec] = Field(default_factory=list)

    def selections(self):
        """(location within `report`, coordinate, values) of every value the section selects, for checking
        metric names, labels, protocols and N against the experiment when it loads."""
        for kind, items in (("tables", self.tables), ("curves", self.curves), ("findings", self.findings)):
            for i, item in enumerate(items):
                yield (kind, i, "metric"), "metric", [item.metric]
                yield from _where((kind, i, "where"), item.where)
                if isinstance(item, CurveSpec) and isinstance(item.x, dict):
                    dim = item.x_dim
                    yield (kind, i, "x", dim), dim, list(item.x[dim])
                if isinstance(item, FindingSpec):
                    for side in ("left", "right"):
                        value = getattr(item, side)
                        if isinstance(value, Delta):
                            for j, w in enumerate(value.delta):
                                yield from _where((kind, i, side, "delta", j), w)
                        else:
                            yield from _where((kind, i, side), value)


def _where(loc: tuple, where: dict[str, list[str]]):
    for dim, values in where.items():
        yield loc + (dim,), dim, values
