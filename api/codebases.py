"""/api/v1/codebases: list, detail, versions and uploads, through rag.services (an upload goes
through the upload page's own form, so it is checked and refused exactly as there)."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja import File, Form, Router, Status
from ninja.files import UploadedFile
from ninja.pagination import LimitOffsetPagination, paginate

from api import present
from api.auth import reader, writer
from api.schemas import CodebaseOut, CodebaseVersionOut, Duplicate, Problem
from rag import services, versions
from rag.forms import NewVersionForm, UploadForm

router = Router(tags=["codebases"])
# The two paths that take uploads, each named once for all its methods: the body cap at the
# server's edge (planagents.limits) finds them by this name and gives them the upload cap.
UPLOADS = "codebases"
VERSIONS = "codebase_versions"


def _form_error(form: UploadForm | NewVersionForm) -> str:
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


@router.get("", response=list[CodebaseOut], url_name=UPLOADS)
@paginate(LimitOffsetPagination)
def list_codebases(request: HttpRequest) -> list[dict[str, Any]]:
    """Your codebases, newest first."""
    rows = list(services.codebases_for(reader(request)))
    latest = versions.latest_numbers(c.pk for c in rows)
    return [present.codebase(c, latest.get(c.pk)) for c in rows]


@router.post(
    "",
    url_name=UPLOADS,
    response={201: CodebaseOut, 400: Problem, 409: Duplicate},
    summary="Upload a codebase",
)
def upload_codebase(
    request: HttpRequest,
    pack: Annotated[list[UploadedFile], File(description="A Repomix pack (any style) or a zip.")],
    name: Annotated[str, Form(description="Defaults to the file's name.")] = "",
    allow_duplicate: Annotated[
        bool, Form(description="Index bytes you uploaded before again.")
    ] = False,
    if_incomplete: Annotated[
        str, Form(description="refuse, or warn: index an incomplete pack.")
    ] = "refuse",
) -> Status[dict[str, Any]]:
    """Upload a Repomix pack (or its split parts) or a zip; it is indexed in the background.
    Poll the codebase until its status is `ready`."""
    owner = writer(request)
    data = {"name": name, "allow_duplicate": allow_duplicate, "if_incomplete": if_incomplete}
    form = UploadForm(data, MultiValueDict({"pack": list(pack)}))
    if not form.is_valid():
        return Status(400, {"detail": _form_error(form)})
    try:
        codebase = services.create_codebase_from_upload(
            owner,
            form.cleaned_data["name"],
            form.cleaned_data["pack"],
            allow_duplicate=form.cleaned_data["allow_duplicate"],
        )
    except services.DuplicateUpload as exc:
        return Status(409, {"detail": exc.message, "existing": exc.existing.pk})
    except services.UploadError as exc:
        return Status(400, {"detail": exc.message})
    return Status(201, present.codebase(codebase, None))


@router.get("/{codebase_id}", response=CodebaseOut)
def get_codebase(request: HttpRequest, codebase_id: int) -> dict[str, Any]:
    """One of your codebases: its status while it indexes, its counts once ready."""
    codebase = services.get_codebase_for(reader(request), codebase_id)
    # Without a worker sweep (the embedded default), looking is what notices a dead job.
    if services.resume_if_stalled(codebase):
        codebase.refresh_from_db()
    return present.codebase(codebase, versions.history(codebase).first())


@router.get("/{codebase_id}/versions", response=list[CodebaseVersionOut], url_name=VERSIONS)
@paginate(LimitOffsetPagination)
def list_versions(request: HttpRequest, codebase_id: int) -> Any:
    """The codebase's versions, newest first: which files each one added, removed, changed."""
    codebase = services.get_codebase_for(reader(request), codebase_id)
    return versions.history(codebase)


@router.post(
    "/{codebase_id}/versions",
    url_name=VERSIONS,
    response={200: CodebaseOut, 202: CodebaseOut, 400: Problem, 409: Problem},
    summary="Upload a new version",
)
def upload_version(
    request: HttpRequest,
    codebase_id: int,
    pack: Annotated[list[UploadedFile], File(description="A new pack or zip of the same code.")],
) -> Status[dict[str, Any]]:
    """Replace the codebase's code with a new pack; it is re-indexed in the background (202),
    and plans resting on changed files show as stale. A pack byte for byte the one already
    indexed makes no version and answers 200 with the codebase as it is, so a sync that
    finds nothing changed is not an error."""
    codebase = services.get_codebase_for(writer(request), codebase_id)
    form = NewVersionForm({}, MultiValueDict({"pack": list(pack)}))
    if not form.is_valid():
        return Status(400, {"detail": _form_error(form)})
    try:
        services.upload_new_version(codebase, form.cleaned_data["pack"])
    except services.IndexingBusy as exc:
        return Status(409, {"detail": exc.message})
    except services.NothingChanged:
        return Status(200, present.codebase(codebase, versions.history(codebase).first()))
    except services.UploadError as exc:
        return Status(400, {"detail": exc.message})
    codebase.refresh_from_db()
    return Status(202, present.codebase(codebase, versions.history(codebase).first()))
