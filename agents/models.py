"""What the agents leave behind besides messages: a trace of every LLM call, and the history of
staff reviews of a plan. Both are records: written once, read by the owner and staff."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from conversations.models import Message, Plan, PlanningSession


class LLMCall(models.Model):
    """One call to a model, with what it was given and what it wrote back. A retry, a redo
    after an echo and a JSON repair are each a call of their own."""

    class Outcome(models.TextChoices):
        OK = "ok", "OK"
        RETRIED = "retried", "Failed, retried"
        REDONE = "redone", "Redone (echo or placeholder)"
        REPAIRED = "repaired", "Invalid JSON, repaired"
        CUT_OFF = "cut_off", "Cut off at its token limit, complete part kept"
        STOPPED = "stopped", "Stopped by the human"
        TIMED_OUT = "timed_out", "Time limit"
        ERROR = "error", "Error"

    session = models.ForeignKey(PlanningSession, on_delete=models.CASCADE, related_name="llm_calls")
    """The session the call was made for."""
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="llm_calls"
    )
    """The message the reply streamed into; empty for calls outside a message (signals, routing)."""
    purpose = models.CharField(max_length=80, blank=True)
    """What the call was for: the turn key (propose:2) or the structured reply's kind (TurnSignal)."""
    profile = models.CharField(max_length=50, blank=True)
    """LLM profile that served the call."""
    model = models.CharField(max_length=100, blank=True)
    """Model name that served the call."""
    schema = models.CharField(max_length=80, blank=True)
    """Name of the JSON schema the reply was held to; empty for free text."""
    prompt = models.JSONField(default=list)
    """The messages sent: [{"role", "content"}], cut to the stored size (see `truncated`)."""
    output = models.TextField(blank=True)
    """The raw reply as the model wrote it (JSON text for structured calls), before rendering."""
    outcome = models.CharField(max_length=12, choices=Outcome.choices, default=Outcome.OK)
    """How the call ended, and whether its reply was used."""
    note = models.TextField(blank=True)
    """Why it ended so: the error, the echo, the validation problems."""
    prompt_tokens = models.PositiveIntegerField(default=0)
    """Tokens the model read for this call."""
    completion_tokens = models.PositiveIntegerField(default=0)
    """Tokens the model wrote for this call."""
    cached_tokens = models.PositiveIntegerField(default=0)
    """Prompt tokens the backend took from its prompt cache (backends that report it)."""
    duration_ms = models.PositiveIntegerField(default=0)
    """Wall time of the call, from request to its last piece or its failure."""
    first_piece_ms = models.PositiveIntegerField(null=True, blank=True)
    """Time from the request to the first piece of the reply (waiting for a slot and reading
    the prompt); empty when no piece came. With duration_ms it gives the machine's reading and
    writing speed (agents.trace.speed)."""
    truncated = models.BooleanField(default=False)
    """Prompt or output were longer than the stored size and were cut in the middle."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the call ended (and was recorded)."""

    class Meta:
        ordering = ["session", "pk"]
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return f"call {self.pk} ({self.purpose or self.schema or 'text'}, {self.outcome})"


class PlanReviewEvent(models.Model):
    """One change of a plan's review status or notes, as staff made it."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="review_events")
    """The plan version reviewed."""
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Who made the change."""
    status = models.CharField(max_length=20, choices=Plan.Review.choices)
    """The review status after the change."""
    previous_status = models.CharField(max_length=20, blank=True)
    """The review status before it."""
    notes = models.TextField(blank=True)
    """The reviewer's notes after the change."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the change was made."""

    class Meta:
        ordering = ["plan", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.plan}: {self.previous_status or '—'} → {self.status}"


class ModelTicket(models.Model):
    """A local-model call's place in the machine's one line for the model (agents.model_queue):
    waiting until `admitted_at`, then generating; deleted when the call ends. A ticket whose
    process stopped checking in (`seen_at`) is dead and ignored, so a killed worker never
    holds the line."""

    priority = models.PositiveSmallIntegerField(default=0)
    """0 a live turn, 1 a section regeneration, 2 background work: lower goes first."""
    session = models.ForeignKey(
        PlanningSession, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    profile = models.CharField(max_length=50, blank=True)
    purpose = models.CharField(max_length=80, blank=True)
    estimate_s = models.FloatField(null=True, blank=True)
    """How long the call should take once it starts, at this machine's measured speed (None:
    not measured yet); what the calls behind it are told to wait."""
    holder = models.CharField(max_length=120, blank=True)
    """host:pid of the process making the call."""
    created_at = models.DateTimeField(auto_now_add=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["priority", "pk"]
        indexes = [models.Index(fields=["seen_at"])]

    def __str__(self) -> str:
        state = "generating" if self.admitted_at else "waiting"
        return f"ticket {self.pk} ({self.purpose}, {state})"


class SessionEstimate(models.Model):
    """What a session was expected to use when it started (agents.estimate), kept so its page
    and the admin can set it against what it used."""

    session = models.OneToOneField(
        PlanningSession, on_delete=models.CASCADE, related_name="estimate"
    )
    """The session estimated."""
    mode = models.CharField(max_length=20)
    """The session's mode when it was estimated."""
    agent_a_profile = models.CharField(max_length=50)
    """Agent A's profile the estimate was made for."""
    agent_b_profile = models.CharField(max_length=50)
    """Agent B's profile the estimate was made for."""
    history = models.PositiveIntegerField(default=0)
    """Finished sessions of the mode on this machine the estimate rests on."""
    basis = models.CharField(max_length=10, default="none")
    """history (every step measured), partial (some borrowed or untimed) or none (no history)."""
    calls = models.FloatField(null=True, blank=True)
    """Expected LLM calls; empty with no history."""
    tokens = models.FloatField(null=True, blank=True)
    """Expected tokens read and written (median), with the p25–p75 range below."""
    tokens_low = models.FloatField(null=True, blank=True)
    tokens_high = models.FloatField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    """Expected model time in seconds (median), with the p25–p75 range below; empty: unknown."""
    seconds_low = models.FloatField(null=True, blank=True)
    seconds_high = models.FloatField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)
    """Expected money over the profiles with a price; empty when none has one."""
    detail = models.JSONField(default=dict, blank=True)
    """The steps (node, profile, figures, basis), the money per profile and the notes."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the estimate was made (the session's start)."""

    def __str__(self) -> str:
        return f"estimate of session {self.session_id}"
