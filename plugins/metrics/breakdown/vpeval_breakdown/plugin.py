"""Entry point: registers the breakdown metrics (numpy only; the broken-down metric comes through the core)."""

from vpeval import hookimpl


@hookimpl
def register_metrics(register):
    from vpeval_breakdown.attribute_inference import AttributeInference
    from vpeval_breakdown.by_attribute import ByAttribute, ByAttributeSimilarity

    register(ByAttribute)
    register(ByAttributeSimilarity)
    register(AttributeInference)
