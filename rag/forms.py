from django import forms

from rag.git_source import MAX_REF_CHARS, MAX_URL_CHARS, GitSourceError, check_source
from rag.services import UploadError, check_uploads

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
        help_text="Output of npx repomix in any style (XML, JSON, Markdown, plain), "
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
        """Check the upload here, once (services.check_uploads: in a child process), so that
        an incomplete pack is refused on the form; `cleaned_data["pack"]` is then the checked
        upload, which the upload service takes as it is instead of checking it again."""
        cleaned = super().clean() or {}
        uploads = cleaned.get("pack")
        if uploads:
            try:
                checked = check_uploads(uploads)
            except UploadError as exc:
                raise forms.ValidationError(exc.message, code="unreadable") from None
            if checked.incomplete and cleaned.get("if_incomplete") != WARN:
                raise forms.ValidationError(checked.incomplete, code="incomplete")
            cleaned["pack"] = checked
        return cleaned


class NewVersionForm(forms.Form):
    pack = MultipleFileField(
        label="New version",
        help_text="A new Repomix pack or zip of the same repository. Unchanged code keeps "
        "its vectors, so only what changed is embedded again.",
    )


class GitSourceForm(forms.Form):
    """Add a codebase from a git repository: where it is, and which branch, tag or commit."""

    name = forms.CharField(
        max_length=200, required=False, help_text="Defaults to the repository's name."
    )
    url = forms.CharField(
        label="Repository",
        max_length=MAX_URL_CHARS,
        help_text="An https:// or ssh URL of a public repository "
        "(https://github.com/owner/repo.git, git@host:owner/repo.git).",
    )
    ref = forms.CharField(
        label="Branch, tag or commit",
        max_length=MAX_REF_CHARS,
        required=False,
        help_text="Empty for the repository's default branch.",
    )

    def clean(self) -> dict[str, object]:
        """`cleaned_data["source"]` is the checked source (rag.git_source.check_source)."""
        cleaned = super().clean() or {}
        if "url" in cleaned:
            try:
                cleaned["source"] = check_source(cleaned["url"], cleaned.get("ref") or "")
            except GitSourceError as exc:
                raise forms.ValidationError(exc.message, code="refused") from None
        return cleaned
