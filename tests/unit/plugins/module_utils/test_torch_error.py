"""module_utils._job.torch_error: a rank's exception from torch's @record error file (TORCHELASTIC_ERROR_FILE), read tolerantly.

The forms are torch's: ``ErrorHandler.record_exception`` (torch/distributed/elastic/multiprocessing/errors/
error_handler.py) writes ``{"message": {"message": "<Type>: <text>", "extraInfo": {"py_callstack": ..., "timestamp":
"<epoch>"}}}``, its agent may add ``errorCode``; torch's reader (``ProcessFailure._get_error_data``) also takes a plain
string ``message`` with a top-level ``timestamp``. A file torch itself wrote is read in
tests/integration/test_train_gloo_checkpoint.py.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.ascend.cluster.plugins.module_utils._job import torch_error as te

CALLSTACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper\n'
    "    return f(*args, **kwargs)\n"
    '  File "/data/train.py", line 41, in main\n'
    "    loss = step(batch)\n"
    "ValueError: batch 17 has NaN labels\n"
)
RECORDED = {
    "message": {"message": "ValueError: batch 17 has NaN labels", "extraInfo": {"py_callstack": CALLSTACK, "timestamp": "1795436105"}}
}


def test_torchs_recorded_form_gives_the_exception_its_traceback_and_time(tmp_path):
    path = tmp_path / "error.json"
    path.write_text(json.dumps(RECORDED))
    found = te.read_error_file(str(path))
    assert found == {
        "exception": "ValueError: batch 17 has NaN labels",
        "traceback": CALLSTACK.rstrip("\n").splitlines(),
        "timestamp": 1795436105,
        "error_code": None,
        "path": str(path),
    }
    assert te.innermost_frame(found["traceback"]) == 'File "/data/train.py", line 41, in main'
    assert te.describe(found) == (
        'it raised ValueError: batch 17 has NaN labels at File "/data/train.py", line 41, in main (torch\'s error file %s)' % path
    )


def test_the_agents_error_code_and_the_plain_string_form():
    with_code = json.loads(json.dumps(RECORDED))
    with_code["message"]["errorCode"] = -11
    coded = te.parse_error(with_code)
    assert coded is not None and coded["error_code"] == -11
    plain = te.parse_error({"message": "Signal 11 (SIGSEGV) received by PID 4242", "timestamp": "17"})
    assert plain == {"exception": "Signal 11 (SIGSEGV) received by PID 4242", "traceback": [], "timestamp": 17, "error_code": None}
    assert te.describe(plain) == "it raised Signal 11 (SIGSEGV) received by PID 4242"


def test_a_long_traceback_keeps_its_last_lines_and_a_multiline_message_its_first():
    stack = (
        "Traceback (most recent call last):\n"
        + "".join('  File "f.py", line %d, in g\n    g()\n' % i for i in range(100))
        + "RecursionError: x\n"
    )
    found = te.parse_error({"message": {"message": "RecursionError: x\nmore", "extraInfo": {"py_callstack": stack, "timestamp": "1"}}})
    assert found is not None
    assert len(found["traceback"]) == te.TRACEBACK_LINES and found["traceback"][-1] == "RecursionError: x"
    assert found["exception"] == "RecursionError: x"


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00",
        b"[1, 2]",
        b'{"message": {"extraInfo": {}}}',
        b'{"message": {"message": ""}}',
        b'{"message": {"message": 7, "extraInfo": "x"}}',
        b'{"message": null}',
        b'{"nothing": "here"}',
    ],
)
def test_anything_else_reads_as_none_and_nothing_raises(tmp_path, content):
    path = tmp_path / "error.json"
    path.write_bytes(content)
    assert te.read_error_file(str(path)) is None


def test_odd_fields_are_read_as_far_as_they_go_and_a_file_too_big_or_missing_is_none(tmp_path):
    odd = te.parse_error({"message": {"message": "OSError: x", "extraInfo": {"py_callstack": 5, "timestamp": "soon"}, "errorCode": True}})
    assert odd == {"exception": "OSError: x", "traceback": [], "timestamp": None, "error_code": None}
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"message": "x" * (te.MAX_BYTES + 10)}))
    assert te.read_error_file(str(big)) is None
    assert te.read_error_file(str(tmp_path / "absent.json")) is None
    assert te.describe(None) is None and te.describe({"exception": ""}) is None
