from typing import Any

from django import forms
from django.conf import settings

from agents.providers import list_profiles
from conversations.models import PlanningSession
from rag.models import Codebase


class NewSessionForm(forms.Form):
    codebase = forms.ModelChoiceField(queryset=Codebase.objects.none(), empty_label=None)
    mode = forms.ChoiceField(
        choices=PlanningSession.Mode.choices, initial=PlanningSession.Mode.PLANNING
    )
    agent_a_profile = forms.ChoiceField(label="Agent A (proposer) model")
    agent_b_profile = forms.ChoiceField(label="Agent B (critic) model")
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
        for name in ("agent_a_profile", "agent_b_profile"):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices
            field.initial = default
        self.fields["max_exchanges"].initial = settings.PLANAGENTS_DEBATE_EXCHANGES

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("agent_a_profile", "agent_b_profile"):
            if data.get(name) and data[name] not in self.available:
                self.add_error(name, "That model profile is not available on this server.")
        return data
