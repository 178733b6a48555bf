"""Test-only copies of the published CAM++ / ERes2Net model code (3D-Speaker, WeSpeaker; Apache-2.0), the references
the plugin's rebuild is compared against. Never imported by the plugin."""
