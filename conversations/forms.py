from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone

from agents.providers import ProfileInfo, list_profiles
from conversations.models import PlanningSession
from rag.models import Codebase


class ProfileSelect(forms.Select):
    """A select whose unavailable profiles are shown, with the reason, but cannot be picked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unavailable: set[str] = set()

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        if value in self.unavailable:
            option["attrs"]["disabled"] = True
        return option


class CodebaseChoiceField(forms.ModelChoiceField):
    """Two uploads of the same project share a name: the upload time and size tell them apart."""

    def label_from_instance(self, obj: Any) -> str:
        when = timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M")
        return f"{obj.name} · uploaded {when} · {obj.file_count} files"


def short_reason(profile: ProfileInfo) -> str:
    """The first sentence of why a profile is unavailable (the models page has the rest)."""
    first = profile.reason.split(". ")[0].rstrip(".")
    return f"{first} (see Models)" if first != profile.reason.rstrip(".") else first


class NewSessionForm(forms.Form):
    # What to do first, then where and how: the task is what a user came to write.
    field_order = ["task", "codebase", "mode"]

    codebase = CodebaseChoiceField(queryset=Codebase.objects.none(), empty_label=None)
    mode = forms.ChoiceField(
        choices=PlanningSession.Mode.choices, initial=PlanningSession.Mode.PLANNING
    )
    agent_a_profile = forms.ChoiceField(label="Agent A (proposer) model", widget=ProfileSelect)
    agent_b_profile = forms.ChoiceField(label="Agent B (critic) model", widget=ProfileSelect)
    fallback_profile = forms.ChoiceField(
        label="Fallback model (finishes a reply when a model fails mid-stream)",
        widget=ProfileSelect,
        required=False,
    )
    max_exchanges = forms.IntegerField(
        label="Debate exchanges before you get the floor", min_value=1, max_value=10, initial=2
    )
    task = forms.CharField(
        widget=forms.Textarea(
            attrs={
                "rows": 4,
                "placeholder": "e.g. Add rate limiting to the login endpoint — or — Sửa lỗi đăng nhập khi mật khẩu sai",
            }
        ),
        max_length=20_000,
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        codebase_field = self.fields["codebase"]
        assert isinstance(codebase_field, forms.ModelChoiceField)
        codebase_field.queryset = Codebase.objects.filter(owner=user, status=Codebase.Status.READY)
        profiles = list_profiles()
        # Setup commands belong on the models page, not inside a dropdown entry.
        choices = [
            (p.name, p.label if p.available else f"{p.label} — unavailable: {short_reason(p)}")
            for p in profiles
        ]
        self.available = {p.name for p in profiles if p.available}
        default = settings.PLANAGENTS_DEFAULT_PROFILE
        if default not in self.available and self.available:
            default = sorted(self.available)[0]
        unavailable = {p.name for p in profiles if not p.available}
        fallback_default = settings.PLANAGENTS_FALLBACK_PROFILE
        for name in ("agent_a_profile", "agent_b_profile", "fallback_profile"):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices
            field.initial = default
            assert isinstance(field.widget, ProfileSelect)
            field.widget.unavailable = unavailable
        fallback = self.fields["fallback_profile"]
        assert isinstance(fallback, forms.ChoiceField)
        fallback.choices = [("", f"Server default ({fallback_default})"), *choices]
        fallback.initial = ""
        self.fields["max_exchanges"].initial = settings.PLANAGENTS_DEBATE_EXCHANGES

    def estimates(self) -> list[dict[str, Any]]:
        """The expected calls, tokens, time and money of every mode with both agents on each
        usable profile, from this machine's history (agents.estimate); the row of the mode and
        models the form holds now is marked "chosen" and comes first."""
        from agents import estimate  # noqa: PLC0415 (reads the trace only when the page asks)

        def value(name: str) -> str:
            return str(self[name].value() or "")

        chosen = (value("mode"), value("agent_a_profile"), value("agent_b_profile"))
        modes = [m for m, _label in PlanningSession.Mode.choices]
        rows = estimate.table(modes, sorted(self.available), chosen)
        return sorted(rows, key=lambda row: not row["chosen"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("agent_a_profile", "agent_b_profile", "fallback_profile"):
            if data.get(name) and data[name] not in self.available:
                self.add_error(name, "That model profile is not available on this server.")
        return data


def start_from(form: NewSessionForm) -> PlanningSession:
    """The session a valid new-session form asks for, started for the form's user: the page,
    the API and the MCP server all start one here. Raises services.SessionError."""
    from agents import estimate  # noqa: PLC0415
    from conversations import services  # noqa: PLC0415 (services imports the models this uses)

    data = form.cleaned_data
    session = services.start_session(
        form.user,
        codebase=data["codebase"],
        task=data["task"],
        mode=data["mode"],
        agent_a_profile=data["agent_a_profile"],
        agent_b_profile=data["agent_b_profile"],
        max_exchanges=data["max_exchanges"],
        fallback_profile=data.get("fallback_profile") or "",
    )
    # Made from the sessions before this one, kept so its page can show estimate vs actual.
    estimate.record(session)
    return session


def problems(form: forms.Form) -> str:
    """A form's errors as one line, for a caller that has no page to show them on."""
    return " ".join(
        f"{name}: {error}" if name != "__all__" else str(error)
        for name, errors in form.errors.items()
        for error in errors
    )
