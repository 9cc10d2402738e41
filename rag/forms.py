from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from rag.completeness import judge_apart

REFUSE = "refuse"
WARN = "warn"


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that accepts several files (e.g. the parts of `repomix --split-output`)."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".xml,.json,.md,.txt,.zip"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):  # type: ignore[no-untyped-def]
        single = super().clean
        if isinstance(data, list | tuple) and data:
            return [single(item, initial) for item in data]
        if isinstance(data, list | tuple):
            data = None  # nothing chosen: let the single-file check say "required"
        return [single(data, initial)]


class UploadForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file's name.")
    pack = MultipleFileField(
        label="Repomix pack or zip",
        help_text="Output of `npx repomix` in any style (XML, JSON, Markdown, plain), "
        "or a .zip of the repository.",
    )
    allow_duplicate = forms.BooleanField(
        required=False,
        label="Index it again anyway",
        help_text="You uploaded these exact bytes before; tick to make a second copy.",
    )
    if_incomplete = forms.ChoiceField(
        label="If the pack is incomplete",
        choices=[(REFUSE, "Refuse it"), (WARN, "Index what is there and warn")],
        initial=REFUSE,
        required=False,  # left out (a script's POST): the default, refuse
        widget=forms.RadioSelect,
        help_text="Incomplete: its own directory listing names files it lacks, or it ends "
        "cut off. A plan on part of a repository cannot see the rest.",
    )

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        uploads = cleaned.get("pack")
        if uploads and cleaned.get("if_incomplete") != WARN:
            reason = incomplete_pack(uploads)
            if reason:
                raise forms.ValidationError(reason, code="incomplete")
        return cleaned


def incomplete_pack(uploads: list[UploadedFile]) -> str:
    """Why the uploaded pack is incomplete (rag.completeness.incompleteness); "" when it is
    complete, or is a zip, or is not a pack the upload's own checks accept.

    This parses the pack in the request, which the upload otherwise leaves to the indexing job:
    it is the only way to refuse before anything is kept (docs/decisions.md). The parse runs in
    a child process (rag.completeness.judge_apart), never in the server's, where it would stall
    every other request for as long as it takes."""
    if sum(upload.size or 0 for upload in uploads) > settings.PLANAGENTS_MAX_UPLOAD_BYTES:
        return ""  # too big: the upload's own check refuses it, without parsing
    return judge_apart([b"".join(upload.chunks()) for upload in uploads])


class NewVersionForm(forms.Form):
    pack = MultipleFileField(
        label="New version",
        help_text="A new Repomix pack or zip of the same repository. Unchanged code keeps "
        "its vectors, so only what changed is embedded again.",
    )
