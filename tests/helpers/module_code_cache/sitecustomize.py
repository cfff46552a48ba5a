"""A compile cache for the Python that Ansible modules run from their AnsiballZ zip (tests only).

Ansible sends every module as a zip and runs it with the zip on ``sys.path``; Python's zipimport
never writes bytecode, so each module run compiles ansible.module_utils (basic.py and ~50 more)
and the collection's module_utils again: about half of a small module's CPU. On a real cluster
each server pays that on its own cores; on the simulated cluster and the test bed every "server"
is this 2-core machine, which pays it for all of them. The tests put this directory on the
modules' ``PYTHONPATH`` (``tests/helpers/ansible_cli.py``, the bed's sshd ``SetEnv``): Python
imports ``sitecustomize`` at start-up, and this one keeps each compiled source in
``$ASCEND_MODULE_CODE_CACHE``, keyed by the source's bytes and the interpreter, and gives the code
the file name the zip would have given it. What runs is unchanged: a changed source is a new key.

Python 3.8 syntax (the oldest target); a Python without zipimport._compile_source (before 3.8)
is left alone, and any error reading or writing the cache falls back to compiling. It shadows the
interpreter's own sitecustomize for those runs (Debian's only installs apport's hook, when present).
"""

from __future__ import annotations

import os
import sys
import zipimport
from types import CodeType

_CACHE_DIR = os.environ.get("ASCEND_MODULE_CODE_CACHE", "")
_compile = getattr(zipimport, "_compile_source", None)  # no typing import: every Python on PYTHONPATH starts with this


def _renamed(code: CodeType, filename: str) -> CodeType:
    """``code`` and every code object nested in it, with ``filename`` as their file name."""
    consts = tuple(_renamed(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _cached_compile(pathname: str, source: bytes) -> CodeType:
    import hashlib
    import marshal

    key = hashlib.sha256(source + sys.version.encode()).hexdigest()
    path = os.path.join(_CACHE_DIR, key[:2], key)
    try:
        with open(path, "rb") as handle:
            return _renamed(marshal.loads(handle.read()), pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    if _compile is None:  # never: installed only when there is one
        raise ImportError("zipimport._compile_source is missing")
    code = _compile(pathname, source)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(marshal.dumps(code))
        os.replace(tmp, path)
    except OSError:
        pass
    return code


if _CACHE_DIR and _compile is not None:
    setattr(zipimport, "_compile_source", _cached_compile)  # noqa: B010 (a private name mypy does not know)
