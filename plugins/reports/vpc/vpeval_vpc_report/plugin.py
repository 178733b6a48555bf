"""Entry point: registers the `vpc` report (the VoicePrivacy toolkits' results files)."""

from vpeval import hookimpl


@hookimpl
def register_reports(register):
    from vpeval_vpc_report.report import VpcReport

    register(VpcReport)
