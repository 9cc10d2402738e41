from django import forms


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


class NewVersionForm(forms.Form):
    pack = MultipleFileField(
        label="New version",
        help_text="A new Repomix pack or zip of the same repository. Unchanged code keeps "
        "its vectors, so only what changed is embedded again.",
    )
