"""Entry point: registers the `paper` report (declared tables, curves and findings; tables across runs)."""

from vpeval import hookimpl


@hookimpl
def register_reports(register):
    from vpeval_paper_report.report import PaperReport

    register(PaperReport)
