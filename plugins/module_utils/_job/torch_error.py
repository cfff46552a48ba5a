# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A rank's exception as torch's ``@record`` wrote it (``TORCHELASTIC_ERROR_FILE``), for the diagnosis.

torch's ``ErrorHandler.record_exception`` (``torch/distributed/elastic/multiprocessing/errors/error_handler.py``) writes
the file as JSON::

    {"message": {"message": "<ExceptionType>: <text>",
                 "extraInfo": {"py_callstack": "<traceback.format_exc()>", "timestamp": "<epoch seconds>"}}}

and its agent may add ``"errorCode"`` to the inner mapping (``override_error_code_in_rootcause_data``). torch's own
reader (``ProcessFailure._get_error_data``, errors/``__init__.py``) also takes a ``message`` that is a plain string, with a
top-level ``timestamp``: both forms are read here. Anything else - not JSON, not these fields, a file too big - reads as
None: the training wrote it, so nothing in it may stop a diagnosis.

:func:`read_error_file` runs on the server (``training_job state=diagnose``); :func:`describe` is the diagnosis's one line.

Runs on target hosts: Python 3.8+, stdlib only.
"""

from __future__ import annotations

import json

# torch's file is one exception and its traceback: a megabyte is far more than any; larger is not read.
MAX_BYTES = 1 << 20
# The traceback's last lines kept (its innermost frames and the exception).
TRACEBACK_LINES = 30
_TEXT_CHARS = 2000


def _text(value: object) -> str | None:
    return value[:_TEXT_CHARS] if isinstance(value, str) and value.strip() else None


def parse_error(data: object) -> dict | None:
    """``{"exception", "traceback", "timestamp", "error_code"}`` from the decoded file, None when it is not torch's form.

    ``exception``: ``"ValueError: bad batch"``; ``traceback``: its last :data:`TRACEBACK_LINES` lines (a list, empty
    when torch wrote none); ``timestamp``: epoch seconds or None; ``error_code``: the agent's exit code or None.
    """
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    extra: object = {}
    code = None
    stamp = data.get("timestamp")
    if isinstance(message, dict):
        extra = message.get("extraInfo") if isinstance(message.get("extraInfo"), dict) else {}
        code = message.get("errorCode")
        stamp = extra.get("timestamp") if isinstance(extra, dict) else None
        message = message.get("message")
    exception = _text(message)
    if exception is None:
        return None
    callstack = str(extra["py_callstack"]) if isinstance(extra, dict) and isinstance(extra.get("py_callstack"), str) else ""
    lines = [line for line in callstack.splitlines() if line.strip()][-TRACEBACK_LINES:]
    try:
        timestamp = int(stamp) if stamp is not None and not isinstance(stamp, bool) else None
    except (TypeError, ValueError):
        timestamp = None
    return {
        "exception": exception.strip().splitlines()[0],
        "traceback": [line[:_TEXT_CHARS] for line in lines],
        "timestamp": timestamp,
        "error_code": code if isinstance(code, int) and not isinstance(code, bool) else None,
    }


def read_error_file(path: str) -> dict | None:
    """:func:`parse_error` of the file at ``path`` plus its ``path``; None when it is missing, unreadable, over
    :data:`MAX_BYTES`, or not torch's form."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_BYTES:
        return None
    try:
        found = parse_error(json.loads(raw.decode("utf-8", "replace")))
    except ValueError:
        return None
    return dict(found, path=path) if found else None


def innermost_frame(traceback: list) -> str | None:
    """The last ``File "...", line N, in f`` of a traceback's lines, without its indent."""
    for line in reversed(traceback or []):
        if isinstance(line, str) and line.strip().startswith('File "'):
            return line.strip()
    return None


def describe(error: dict | None) -> str | None:
    """One line for the diagnosis: ``it raised ValueError: bad batch at File "train.py", line 12, in step (torch's error
    file <path>)``; None without an error."""
    if not isinstance(error, dict) or not error.get("exception"):
        return None
    where = innermost_frame(error.get("traceback") or [])
    line = "it raised %s" % error["exception"]
    if where:
        line += " at %s" % where
    if error.get("path"):
        line += " (torch's error file %s)" % error["path"]
    return line
