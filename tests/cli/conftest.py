"""The CLI's tests run many commands in one process, each with CliRunner's own streams, while
the in-process runs' background jobs (the search vectors) go on logging after their command
has returned and its streams are closed. Outside tests a command owns its process and its
streams; here a log line bound for a closed stream must not be reported into the next
command's output, which the tests read line by line."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(autouse=True)
def _no_log_errors_into_the_next_command(monkeypatch):
    monkeypatch.setattr(logging, "raiseExceptions", False)
