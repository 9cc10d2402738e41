from django import forms

from api.models import ApiToken


class NewTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="Where it will be used: “laptop CLI”, “CI”, “Claude Code”."
    )
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ,
        widget=forms.RadioSelect,
        help_text="Read: look at codebases, sessions and plans. Read and write: also upload, "
        "start sessions and everything else that changes something.",
    )
