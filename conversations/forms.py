import os
from typing import Any

from django import forms
from django.conf import settings

from agents.providers import list_profiles
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


class NewSessionForm(forms.Form):
    codebase = forms.ModelChoiceField(queryset=Codebase.objects.none(), empty_label=None)
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
        codebase_field = self.fields["codebase"]
        assert isinstance(codebase_field, forms.ModelChoiceField)
        codebase_field.queryset = Codebase.objects.filter(owner=user, status=Codebase.Status.READY)
        profiles = list_profiles()
        choices = [
            (p.name, p.label if p.available else f"{p.label} — unavailable: {p.reason}")
            for p in profiles
        ]
        self.available = {p.name for p in profiles if p.available}
        default = settings.PLANAGENTS_DEFAULT_PROFILE
        if default not in self.available and self.available:
            default = sorted(self.available)[0]
        unavailable = {p.name for p in profiles if not p.available}
        fallback_default = os.environ.get("PLANAGENTS_FALLBACK_PROFILE", "").strip() or "local"
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

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("agent_a_profile", "agent_b_profile", "fallback_profile"):
            if data.get(name) and data[name] not in self.available:
                self.add_error(name, "That model profile is not available on this server.")
        return data
