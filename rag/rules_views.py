"""The codebase page's planning rules and pinned context: add, edit, disable, delete. Each view
looks the codebase up for this user (404 otherwise), does one thing and goes back to the page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from rag import pins, rules, services
from rag.models import Codebase, Pin, Rule
from rag.paths import FileSet

MAX_RULES = 200
MAX_PINS = 50


class RuleForm(forms.ModelForm):
    class Meta:
        model = Rule
        fields = ["text", "severity"]
        widgets = {"text": forms.Textarea(attrs={"rows": 2, "maxlength": rules.RULE_CHARS})}

    def clean_text(self) -> str:
        text = str(self.cleaned_data["text"]).strip()
        if not text:
            raise forms.ValidationError("Write the rule.")
        if len(text) > rules.RULE_CHARS:
            raise forms.ValidationError(f"At most {rules.RULE_CHARS} characters.")
        return text


class PinForm(forms.Form):
    kind = forms.ChoiceField(choices=Pin.Kind.choices)
    path = forms.CharField(max_length=1000, required=False)
    start_line = forms.IntegerField(min_value=1, max_value=10_000_000, required=False)
    end_line = forms.IntegerField(min_value=1, max_value=10_000_000, required=False)
    text = forms.CharField(max_length=pins.PIN_TEXT_CHARS, required=False, strip=True)

    def __init__(self, *args: Any, codebase: Codebase, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.codebase = codebase

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind, path = data.get("kind"), (data.get("path") or "").strip()
        start, end = data.get("start_line"), data.get("end_line")
        if start and end and end < start:
            raise forms.ValidationError("The last line comes before the first.")
        if kind == Pin.Kind.FILE:
            real = FileSet(self.codebase.files.values_list("path", flat=True)).resolve(path).path
            if not path or real is None:
                raise forms.ValidationError(f"No file {path!r} in this codebase.")
            data["path"], data["text"] = real, ""
        else:
            if not data.get("text"):
                raise forms.ValidationError(f"Write the {kind} to pin.")
            data["path"], data["start_line"], data["end_line"] = path, None, None
        return data


def context(codebase: Codebase) -> dict[str, Any]:
    """What the codebase page's rules and pins sections show (rules detected on first look)."""
    if codebase.is_ready:
        rules.detect(codebase)
    fileset = FileSet(codebase.files.values_list("path", flat=True))
    shown = [
        {"rule": r, "refs": rules.resolve_refs(codebase, r.text, fileset=fileset)}
        for r in codebase.rules.all()
    ]
    pinned = [
        {"pin": p, "item": pins.resolve(p, limit=pins.PAGE_CHARS)} for p in codebase.pins.all()
    ]
    return {
        "rules": shown,
        "rule_form": RuleForm(),
        "pins": pinned,
        "pin_form": PinForm(codebase=codebase),
    }


def _back(codebase: Codebase, anchor: str) -> HttpResponse:
    return redirect(reverse("rag:detail", args=[codebase.pk]) + f"#{anchor}")


def _errors(form: forms.BaseForm) -> str:
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


@login_required
@require_POST
def rule_add(request: HttpRequest, pk: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)  # type: ignore[arg-type]
    form = RuleForm(request.POST)
    if codebase.rules.count() >= MAX_RULES:
        messages.error(request, f"A codebase has at most {MAX_RULES} rules; delete some first.")
    elif form.is_valid():
        Rule.objects.create(codebase=codebase, **form.cleaned_data)
        messages.success(request, "Rule added.")
    else:
        messages.error(request, f"The rule was not added: {_errors(form)}")
    return _back(codebase, "rules")


@login_required
@require_POST
def rule_edit(request: HttpRequest, pk: int, rule_id: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)  # type: ignore[arg-type]
    rule = get_object_or_404(Rule, pk=rule_id, codebase=codebase)
    form = RuleForm(request.POST, instance=rule)
    if form.is_valid():
        rule = form.save(commit=False)
        rule.enabled = request.POST.get("enabled") == "on"
        rule.save()
        messages.success(request, "Rule saved.")
    else:
        messages.error(request, f"The rule was not saved: {_errors(form)}")
    return _back(codebase, f"rule-{rule_id}")


@login_required
@require_POST
def rule_delete(request: HttpRequest, pk: int, rule_id: int) -> HttpResponse:
    """Delete a user-written rule; a detected one is disabled (deleting it would only bring it
    back at the next detection)."""
    codebase = services.get_codebase_for(request.user, pk)  # type: ignore[arg-type]
    rule = get_object_or_404(Rule, pk=rule_id, codebase=codebase)
    if rule.source:
        Rule.objects.filter(pk=rule.pk).update(enabled=False)
        messages.success(request, "Detected rule disabled.")
    else:
        rule.delete()
        messages.success(request, "Rule deleted.")
    return _back(codebase, "rules")


@login_required
@require_POST
def pin_add(request: HttpRequest, pk: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)  # type: ignore[arg-type]
    form = PinForm(request.POST, codebase=codebase)
    if codebase.pins.count() >= MAX_PINS:
        messages.error(request, f"A codebase has at most {MAX_PINS} pins; unpin some first.")
    elif form.is_valid():
        Pin.objects.create(codebase=codebase, **form.cleaned_data)
        messages.success(request, "Pinned: new sessions on this codebase will see it.")
    else:
        messages.error(request, f"Nothing was pinned: {_errors(form)}")
    return _back(codebase, "pins")


@login_required
@require_POST
def pin_delete(request: HttpRequest, pk: int, pin_id: int) -> HttpResponse:
    codebase = services.get_codebase_for(request.user, pk)  # type: ignore[arg-type]
    get_object_or_404(Pin, pk=pin_id, codebase=codebase).delete()
    messages.success(request, "Unpinned.")
    return _back(codebase, "pins")
