"""A request refused for its size or its number of files is logged as one line, not a crash."""

import logging

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse


@pytest.fixture
def console(settings):
    """The project's logging as settings.LOGGING configures it, written to a list."""
    from logging.config import dictConfig

    dictConfig(settings.LOGGING)
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    yield lines
    logging.getLogger().removeHandler(handler)


@pytest.mark.django_db
def test_a_refused_101_file_upload_logs_one_warning_line_without_a_traceback(client, user, console):
    client.force_login(user)
    packs = [SimpleUploadedFile(f"part{i}.xml", b"<file path='a.py'>x</file>") for i in range(101)]

    response = client.post(reverse("rag:upload"), {"name": "many", "pack": packs})

    assert response.status_code == 400
    refused = [line for line in console if "django.security" in line]
    assert len(refused) == 1, console
    assert refused[0].startswith("WARNING django.security.TooManyFilesSent: Refused POST ")
    assert "/codebases/upload/" in refused[0]
    assert "DATA_UPLOAD_MAX_NUMBER_FILES" in refused[0]
    assert not any("Traceback" in line for line in console), console
