"""vpeval.codehash: a plugin's code hash is its package's .py files (path and bytes, in path order), then
those of each lib/ library its distribution requires; moving the code out of config.py kept that value."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

from vpeval.codehash import code_fingerprint, referenced_code
from vpeval.plugins import get_plugin_manager


def package_files_digest(digest, package: str) -> None:
    root = Path(importlib.import_module(package).__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())


def expected_code_hash(package: str, libraries: list[str]) -> str:
    digest = hashlib.sha256()
    package_files_digest(digest, package)
    for library in libraries:
        digest.update(f"library:{library}".encode())
        package_files_digest(digest, library)
    return digest.hexdigest()[:16]


def test_a_plugins_code_hash_is_its_files_then_its_libraries_files():
    manager = get_plugin_manager()
    poolvc = manager.get("anonymizer", "poolvc")  # requires vpeval-world
    mcadams = manager.get("anonymizer", "mcadams")  # requires no library
    assert code_fingerprint(poolvc) == expected_code_hash("vpeval_poolvc", ["vpeval_world"])
    assert code_fingerprint(mcadams) == expected_code_hash(mcadams.__module__.split(".")[0], [])


def test_helpers_hash_is_over_the_other_plugins_code_hashes():
    manager = get_plugin_manager()
    poolvc, ge2e = manager.get("anonymizer", "poolvc"), manager.get("encoder", "ge2e")
    assert referenced_code(poolvc, []) == "" and referenced_code(poolvc, [poolvc]) == ""
    assert referenced_code(poolvc, [ge2e]) == hashlib.sha256(code_fingerprint(ge2e).encode()).hexdigest()[:16]
