"""Score-based VoicePrivacy metrics: EER (step and ROCCH), minDCF, Cllr, linkability, ZEBRA, GVD/De-ID,
speaker-inversion metrics, and a speaker-level bootstrap for confidence intervals.

The numeric modules (eer, dcf, cllr, pav, linkability, zebra, gvd, inversion, bootstrap) need only numpy
and scipy and can be used without the plugin machinery.
"""
