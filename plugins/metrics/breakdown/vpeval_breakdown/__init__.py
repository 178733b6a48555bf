"""Breakdowns of any metric by any speaker attribute (gender, age bands, accent, any spk2<attribute> file or
manifest column). attributes reads and groups the attributes without the plugin machinery."""
