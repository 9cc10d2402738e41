"""The codebase tools' work, in plain sync functions over rag's own services: every lookup is
rag.services.get_codebase_for (the web app's and the API's), an upload goes through the
upload page's own form (so it is checked and refused in the same words)."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404
from django.utils.datastructures import MultiValueDict
from mcp.server.mcpserver.exceptions import ToolError

from api import present
from mcp_server.identity import Caller, writer
from rag import git_sync, services, versions
from rag import index as rag_index
from rag.forms import GitSourceForm, UploadForm
from rag.models import Codebase
from rag.navigation import Navigator
from rag.retrieval import retrieve

MAX_HITS = 20


def codebase_for(caller: Caller, codebase_id: int) -> Codebase:
    try:
        return services.get_codebase_for(caller.user, int(codebase_id))
    except (Http404, ValueError):
        raise ToolError(f"No codebase {codebase_id} of yours; list_codebases shows them.") from None


def ready_codebase(caller: Caller, codebase_id: int) -> Codebase:
    codebase = codebase_for(caller, codebase_id)
    if services.resume_if_stalled(codebase):
        codebase.refresh_from_db()
    if not codebase.is_ready:
        raise ToolError(
            f"The codebase “{codebase.name}” is not ready ({codebase.get_status_display()}"
            + (f": {codebase.error}" if codebase.error else "")
            + "); wait for it (list_codebases shows its status)."
        )
    return codebase


def described(codebase: Codebase) -> dict[str, Any]:
    """The API's view of a codebase (api.present), dates as text."""
    row = present.codebase(codebase, versions.history(codebase).first())
    return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in row.items()}


def list_codebases(caller: Caller) -> list[dict[str, Any]]:
    return [described(c) for c in services.codebases_for(caller.user)]


def _upload(path: str, content_base64: str, filename: str, caller: Caller) -> SimpleUploadedFile:
    limit = settings.PLANAGENTS_MAX_UPLOAD_BYTES
    if bool(path) == bool(content_base64):
        raise ToolError("Give either `path` (a zip or pack on this machine) or `content_base64`.")
    if path:
        if not caller.local:
            # Over HTTP a path would read the server's disk for whoever holds a token.
            raise ToolError(
                "A path is read only by the local (stdio) server; over HTTP send the file's "
                "bytes as `content_base64` with its `filename`."
            )
        file = Path(path).expanduser()
        if not file.is_file():
            raise ToolError(f"No file at {path!r} (give a .zip or a Repomix pack).")
        if file.stat().st_size > limit:
            raise ToolError(f"{file.name} is larger than the upload limit ({limit} bytes).")
        return SimpleUploadedFile(file.name, file.read_bytes())
    if len(content_base64) > (limit * 4) // 3 + 8:
        raise ToolError(f"The file is larger than the upload limit ({limit} bytes).")
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise ToolError("`content_base64` is not valid base64.") from None
    if not filename.strip():
        raise ToolError("Name the file (`filename`, e.g. repo.zip or pack.xml).")
    return SimpleUploadedFile(Path(filename).name, data)


def add_codebase(
    caller: Caller,
    *,
    path: str = "",
    content_base64: str = "",
    filename: str = "",
    name: str = "",
    allow_duplicate: bool = False,
) -> Codebase:
    """Check and keep the upload and queue its indexing, as the upload page does."""
    writer(caller)
    upload = _upload(path, content_base64, filename, caller)
    form = UploadForm(
        {"name": name, "allow_duplicate": allow_duplicate, "if_incomplete": "refuse"},
        MultiValueDict({"pack": [upload]}),
    )
    if not form.is_valid():
        raise ToolError(" ".join(str(e) for errors in form.errors.values() for e in errors))
    try:
        return services.create_codebase_from_upload(
            caller.user,
            form.cleaned_data["name"],
            form.cleaned_data["pack"],
            allow_duplicate=form.cleaned_data["allow_duplicate"],
        )
    except services.DuplicateUpload as exc:
        raise ToolError(f"{exc.message} (codebase {exc.existing.pk})") from None
    except services.UploadError as exc:
        raise ToolError(exc.message) from None


def add_from_git(caller: Caller, *, url: str, ref: str = "", name: str = "") -> Codebase:
    """Queue the fetch of a git repository's branch, tag or commit and its indexing, as the
    upload page's "Add from git" does (its form refuses the same URLs in the same words)."""
    writer(caller)
    form = GitSourceForm({"name": name, "url": url, "ref": ref})
    if not form.is_valid():
        raise ToolError(" ".join(str(e) for errors in form.errors.values() for e in errors))
    return git_sync.add_from_git(
        caller.user, form.cleaned_data["name"], form.cleaned_data["source"]
    )


def indexing_state(caller: Caller, codebase_id: int) -> Codebase:
    codebase = codebase_for(caller, codebase_id)
    if services.resume_if_stalled(codebase):
        codebase.refresh_from_db()
    return codebase


def search_code(caller: Caller, codebase_id: int, query: str, k: int) -> dict[str, Any]:
    codebase = ready_codebase(caller, codebase_id)
    if not query.strip():
        raise ToolError("Say what to look for.")
    hits = retrieve(codebase, query[:2000], max(1, min(int(k), MAX_HITS)))
    return {
        "codebase": codebase.pk,
        "query": query,
        "hits": [
            {
                "citation": h.citation,
                "path": h.path,
                "start_line": h.start_line,
                "end_line": h.end_line,
                "score": h.score,
                "reason": h.reason,
                "text": h.text,
            }
            for h in hits
        ],
    }


def find_symbol(caller: Caller, codebase_id: int, name: str) -> dict[str, Any]:
    codebase = ready_codebase(caller, codebase_id)
    result = Navigator(rag_index.index_dir(codebase.pk)).find_symbol(name[:300])
    return {
        "codebase": codebase.pk,
        "query": result.query,
        "match": result.match,
        "message": result.message,
        "hits": [
            {
                "name": h.qualified_name,
                "kind": h.kind,
                "location": h.location,
                "path": h.path,
                "start_line": h.start_line,
                "end_line": h.end_line,
            }
            for h in result.hits
        ],
        "suggestions": result.suggestions,
    }
