from django.conf import settings
from django.db import models
from django.utils import timezone

from rag.models import Codebase


class ApprovalRule(models.TextChoices):
    """Which approvers' sign-offs make a plan approved (conversations.reviewers)."""

    ANY = "any", "Any approver"
    ALL = "all", "All approvers"


class PlanningSession(models.Model):
    class Mode(models.TextChoices):
        PLANNING = "planning", "Planning workflow"
        DEBATE = "debate", "Debate"

    class Status(models.TextChoices):
        RUNNING = "running", "Agents are working"
        AWAITING_HUMAN = "awaiting_human", "Waiting for you"
        COMPLETED = "completed", "Completed"
        STOPPED = "stopped", "Stopped"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="planning_sessions"
    )
    """Who started the session; only they can read it or act in it."""
    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="sessions")
    """The indexed codebase the agents plan against."""
    title = models.CharField(max_length=200)
    """Short label shown in lists, taken from the task."""
    task = models.TextField()
    """The change the human asked for, in their words."""
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.PLANNING)
    """Planning workflow or free debate."""
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    """Who has the floor: the agents, the human, or nobody any more."""
    agent_a_profile = models.CharField(max_length=50)
    """LLM profile Agent A (proposer) runs on."""
    agent_b_profile = models.CharField(max_length=50)
    """LLM profile Agent B (critic) runs on."""
    language = models.CharField(max_length=8, default="en")
    """Language of the task (en or vi); agents answer in it."""
    task_analysis = models.JSONField(default=dict, blank=True)
    """What the system worked out about the task: language, kind of change, search terms."""
    max_exchanges = models.PositiveSmallIntegerField(default=2)
    """Debate: how many A→B exchanges run before the human gets the floor back."""
    exchanges_since_human = models.PositiveSmallIntegerField(default=0)
    """Debate: exchanges completed since the human last spoke."""
    turn_index = models.PositiveIntegerField(default=0)
    """How many agent turns have been committed; names the next turn for idempotency."""
    last_seq = models.PositiveIntegerField(default=0)
    """Highest message seq handed out; the next message gets last_seq + 1."""
    stop_requested = models.BooleanField(default=False)
    """The human pressed Stop while agents were running; the job ends at the next check."""
    cancel_requested = models.BooleanField(default=False)
    """The human pressed Stop reply: the reply being written ends, the session goes on."""
    fallback_profile = models.CharField(max_length=50, blank=True)
    """Profile that finishes a turn whose model failed mid-reply; empty: PLANAGENTS_FALLBACK_PROFILE."""
    call_budget = models.PositiveIntegerField(default=0)
    """How many LLM calls the agents may make before handing over to the human (0: no limit)."""
    token_budget = models.PositiveIntegerField(default=0)
    """How many LLM tokens (read + written) the agents may use before handing over (0: no limit)."""
    calls_used = models.PositiveIntegerField(default=0)
    """LLM calls made so far, retries included."""
    tokens_used = models.PositiveIntegerField(default=0)
    """LLM tokens (read + written) used so far."""
    error = models.TextField(blank=True)
    """Why the session failed, if it did."""
    approval_rule = models.CharField(max_length=3, choices=ApprovalRule.choices, default="any")
    """When invited approvers make the plan approved: any one of them, or all of them."""
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    """Last sign of life from the job running the session; a stale one means it died."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the session was started."""
    updated_at = models.DateTimeField(auto_now=True)
    """When the session last changed."""

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "Human"
        AGENT = "agent", "Agent"
        SYSTEM = "system", "System"

    class State(models.TextChoices):
        STREAMING = "streaming", "Streaming"
        COMPLETE = "complete", "Complete"
        INTERRUPTED = "interrupted", "Interrupted"

    session = models.ForeignKey(PlanningSession, on_delete=models.CASCADE, related_name="messages")
    """The session the message belongs to."""
    seq = models.PositiveIntegerField()
    """Position in the session, unique and increasing; clients resume after the last one seen."""
    role = models.CharField(max_length=10, choices=Role.choices)
    """Who wrote it: the human, an agent, or the system."""
    agent = models.CharField(max_length=1, blank=True)
    """"A" or "B" for agent messages, empty otherwise."""
    node = models.CharField(max_length=40, blank=True)
    """Planning node that produced it (analyze_codebase, …), empty in debate mode."""
    turn_key = models.CharField(max_length=80, null=True, blank=True)
    """Names the agent turn that wrote it, so re-running a turn replaces rather than duplicates."""
    content = models.TextField(blank=True)
    """The text (markdown), saved as it streams."""
    html = models.TextField(blank=True)
    """The text rendered to sanitized HTML, stored when first rendered after the text was final."""
    html_digest = models.CharField(max_length=64, blank=True)
    """sha256 of the text `html` was rendered from; when it differs, the text changed since."""
    state = models.CharField(max_length=12, choices=State.choices, default=State.COMPLETE)
    """Whether the text is still streaming, complete, or was cut off."""
    signal = models.CharField(max_length=10, blank=True)
    """Debate: what the agent decided next (CONTINUE, HANDOVER, STOP)."""
    data = models.JSONField(default=dict, blank=True)
    """The structured reply behind the text (a proposal, a plan), when there is one."""
    citations = models.JSONField(default=list, blank=True)
    """Code the message rests on: [{"path", "start", "end", "exists"}]."""
    heard = models.JSONField(default=list, blank=True)
    """Seqs of the human messages (notes, change requests) this agent turn was given."""
    profile = models.CharField(max_length=50, blank=True)
    """LLM profile that wrote it."""
    model = models.CharField(max_length=100, blank=True)
    """Model name that wrote it."""
    prompt_tokens = models.PositiveIntegerField(default=0)
    """Tokens read by the model for this message."""
    completion_tokens = models.PositiveIntegerField(default=0)
    """Tokens the model wrote for this message."""
    latency_ms = models.PositiveIntegerField(default=0)
    """Wall time from request to last token."""
    cost_usd = models.FloatField(null=True, blank=True)
    """Estimated cost in US dollars from the profile's declared prices; empty when it has none."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the message was started."""

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="unique_message_seq"),
            models.UniqueConstraint(fields=["session", "turn_key"], name="unique_message_turn"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role}{self.agent}"


class PlanningState(models.Model):
    session = models.OneToOneField(PlanningSession, on_delete=models.CASCADE, related_name="state")
    """The session this workflow state belongs to."""
    current_node = models.CharField(max_length=40, default="investigate")
    """The node to run next (or checkpoint / completed / stopped)."""
    analysis = models.TextField(blank=True)
    """Output of analyze_codebase."""
    proposal = models.JSONField(default=dict, blank=True)
    """Latest structured proposal from propose_changes."""
    review = models.TextField(blank=True)
    """Latest critique from review_and_refine."""
    validation = models.JSONField(default=dict, blank=True)
    """Result of validate_proposal: {"ok": bool, "problems": [...], "files": [...]}."""
    feedback = models.TextField(blank=True)
    """What the human asked to change at the checkpoint, fed into the next proposal."""
    iteration = models.PositiveSmallIntegerField(default=0)
    """How many times propose_changes has run."""
    validation_failures = models.PositiveSmallIntegerField(default=0)
    """How many proposals in a row failed validation (capped by settings)."""
    updated_at = models.DateTimeField(auto_now=True)
    """When the state last changed."""

    def __str__(self) -> str:
        return f"{self.session_id}@{self.current_node}"


class Plan(models.Model):
    class Review(models.TextChoices):
        DRAFT = "draft", "Draft"
        APPROVED = "approved", "Approved"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        REJECTED = "rejected", "Rejected"

    class Author(models.TextChoices):
        AGENT = "agent", "Agents"
        HUMAN = "human", "Human edit"
        REGENERATE = "regenerate", "Regenerated"

    session = models.ForeignKey(PlanningSession, on_delete=models.CASCADE, related_name="plans")
    """The session that produced the plan."""
    version = models.PositiveIntegerField()
    """1 for the first plan of a session, then 2, 3… as it is revised."""
    markdown = models.TextField()
    """The plan as a markdown document."""
    structured = models.JSONField(default=dict)
    """The same plan as data: summary, decisions, steps, files (with exists), testing, risks."""
    review_status = models.CharField(max_length=20, choices=Review.choices, default=Review.DRAFT)
    """Staff review outcome."""
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Staff member who last set the review status."""
    review_notes = models.TextField(blank=True)
    """What the reviewer had to say."""
    reviewed_at = models.DateTimeField(null=True, blank=True)
    """When the review status was last set."""
    author_kind = models.CharField(max_length=12, choices=Author.choices, default=Author.AGENT)
    """Who made this version: the agents, a human editing a section, or a regeneration."""
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    """The human who edited the section or asked for its regeneration; empty for the agents."""
    note = models.TextField(blank=True)
    """What made this version: the section edited, or the regeneration's instruction."""
    approved_sections = models.JSONField(default=list, blank=True)
    """Keys of the sections the owner approved on this version (summary, step-2, files…)."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When this version was written."""

    class Meta:
        ordering = ["session", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["session", "version"], name="unique_plan_version")
        ]

    def __str__(self) -> str:
        return f"Plan v{self.version} for {self.session}"

    @property
    def made_by(self) -> str:
        """Who made the version, in a few words: "Agents", "Human edit by ann — Edited Step 2"."""
        who = self.get_author_kind_display()
        if self.author_kind != self.Author.AGENT and self.author is not None:
            who += f" by {self.author.get_username()}"
        return f"{who} — {self.note}" if self.note else who


class ShareLinkQuerySet(models.QuerySet["ShareLink"]):
    def active(self) -> "ShareLinkQuerySet":
        """Links that still open the plan: not revoked and not expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class ShareLink(models.Model):
    """A read-only link to a session's plan for people without an account. Only the sha256 of
    the token is kept: the owner sees the token once, when the link is created. What the link
    shows is fixed when it is made (conversations.sharing): one version or always the latest,
    with or without the codebase's rules and the investigation's evidence."""

    session = models.ForeignKey(
        PlanningSession, on_delete=models.CASCADE, related_name="share_links"
    )
    """The session whose plan the link shows."""
    pinned_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    """The one version the link shows; empty: always the latest (and every earlier one).
    Deleting the version deletes the link, so it never falls back to showing another."""
    shows_rules = models.BooleanField(default=False)
    """Whether the plan's Rules and Pinned context sections appear on the shared page."""
    shows_evidence = models.BooleanField(default=False)
    """Whether the investigation's evidence (its code excerpts, [E1]…) appears on the page."""
    may_comment = models.BooleanField(default=False)
    """Whether people holding the link may comment on the version it shows, under a name they
    give (conversations.link_comments); their comments are marked as coming through it."""
    token_hash = models.CharField(max_length=64, unique=True)
    """Hex sha256 of the token in the link; the token itself is never stored."""
    expires_at = models.DateTimeField(null=True, blank=True)
    """When the link stops working; empty: never."""
    revoked_at = models.DateTimeField(null=True, blank=True)
    """When the owner (or staff) revoked the link; empty while it works."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When the link was created."""
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Who created the link (the session's owner)."""

    objects = ShareLinkQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Share link {self.pk} for {self.session}"

    @property
    def is_active(self) -> bool:
        """Not revoked and not expired."""
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > timezone.now()
        )


class PlanComment(models.Model):
    """A comment on a plan step, section or cited line, or a reply to one (a thread is a
    comment and its replies). Anchored to what it was about, not to a step number, so that
    conversations.comments can find it again in a later version or say it is outdated."""

    class Anchor(models.TextChoices):
        STEP = "step", "Step"
        SECTION = "section", "Section"
        LINE = "line", "Cited line"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"

    session = models.ForeignKey(
        PlanningSession, on_delete=models.CASCADE, related_name="plan_comments"
    )
    """The session whose plan it is about; whoever may see the session may see the comment."""
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="comments")
    """The plan version the comment was written on."""
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies"
    )
    """The comment this one answers; empty for the first comment of a thread."""
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Who wrote it; empty for a comment through a share link (and once the user is deleted)."""
    share_link = models.ForeignKey(
        ShareLink, null=True, blank=True, on_delete=models.SET_NULL, related_name="comments"
    )
    """The "may comment" share link it came through; empty for an account's comment (and once
    the link is deleted: `guest_name` still says it came through one)."""
    guest_name = models.CharField(max_length=60, blank=True)
    """The name a reader without an account gave with it; empty for an account's comment."""
    anchor_kind = models.CharField(max_length=10, choices=Anchor.choices)
    """What it is about: a step, a section or a cited line (a reply: its thread's)."""
    anchor = models.JSONField(default=dict)
    """Step: {"target": {kind, name, path}, "title", "detail"}; section: {"key", "text"};
    cited line: {"path", "line"}; as they were on `plan`."""
    text = models.TextField()
    """What the commenter wrote (plain text, shown escaped)."""
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    """Open or resolved; a thread's status is its first comment's."""
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Who last resolved the thread; empty while it is open."""
    resolved_at = models.DateTimeField(null=True, blank=True)
    """When the thread was last resolved."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was written."""

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            # A comment through a link belongs to no account, whoever was logged in.
            models.CheckConstraint(
                condition=models.Q(guest_name="") | models.Q(author__isnull=True),
                name="plan_comment_guest_has_no_author",
            ),
        ]

    def __str__(self) -> str:
        return f"Comment {self.pk} on {self.plan}"

    @property
    def via_link(self) -> bool:
        """Whether it came through a share link, from someone who gave a name."""
        return bool(self.guest_name)


class CommentRequest(models.Model):
    """A regeneration (of one section, or of the whole plan through Revise) that was asked to
    address open comments: which comments, on which version, by which request. The version it
    wrote is found by conversations.plan_comments.written_by."""

    session = models.ForeignKey(
        PlanningSession, on_delete=models.CASCADE, related_name="comment_requests"
    )
    """The session whose plan was regenerated."""
    base = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="+")
    """The version the regeneration started from."""
    section = models.CharField(max_length=20, blank=True)
    """The section regenerated (summary, step-2…); empty for the whole plan."""
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    """The request in the transcript (the regeneration's, or the change request of a Revise)."""
    comments = models.ManyToManyField(PlanComment, related_name="requests")
    """The open comments the prompt held."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was asked."""

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"Comment request {self.pk} on {self.base}"


class Reviewer(models.Model):
    """A user the owner invited to review one session's plan or every plan of a codebase, with
    a role: a viewer reads, a commenter also comments, an approver also signs off. Only the
    owner runs, edits, shares or invites (conversations.permissions)."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        COMMENTER = "commenter", "Commenter"
        APPROVER = "approver", "Approver"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews"
    )
    """Who was invited."""
    role = models.CharField(max_length=10, choices=Role.choices)
    """What they may do: read, also comment, or also sign off."""
    session = models.ForeignKey(
        PlanningSession, null=True, blank=True, on_delete=models.CASCADE, related_name="reviewers"
    )
    """The one session whose plan they review; empty when the invitation is for a codebase."""
    codebase = models.ForeignKey(
        Codebase, null=True, blank=True, on_delete=models.CASCADE, related_name="reviewers"
    )
    """The codebase every plan of which they review; empty when it is for one session."""
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    """The owner who invited them."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When they were invited."""

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(session__isnull=True) ^ models.Q(codebase__isnull=True),
                name="reviewer_one_scope",
            ),
            models.UniqueConstraint(fields=["user", "session"], name="reviewer_once_per_session"),
            models.UniqueConstraint(fields=["user", "codebase"], name="reviewer_once_per_codebase"),
        ]

    def __str__(self) -> str:
        scope = self.session or self.codebase
        return f"{self.user} ({self.role}) on {scope}"


class SignOff(models.Model):
    """An approver's verdict on one plan version. Each verdict is a new row (the history);
    an approver's current verdict is their newest, and it counts only for the version it names:
    a newer version resets it."""

    class Verdict(models.TextChoices):
        APPROVE = "approve", "Approved"
        CHANGES = "changes", "Requested changes"

    session = models.ForeignKey(PlanningSession, on_delete=models.CASCADE, related_name="sign_offs")
    """The session whose plan was signed off."""
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="sign_offs")
    """The version the verdict applies to."""
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_offs"
    )
    """The approver who gave it."""
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    """Approve or Request changes."""
    note = models.TextField(blank=True)
    """What the approver said with it (plain text, shown escaped)."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was given."""

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.reviewer} {self.verdict} {self.plan}"


class ImplementationCheck(models.Model):
    """One check of an implementation against a plan version (conversations.implementation):
    a newer version of the codebase, or a unified diff applied to the plan's code. Its report
    is a version of the plan's record: listed on the plan page, exported with the plan."""

    class Source(models.TextChoices):
        VERSION = "version", "Newer version of the codebase"
        DIFF = "diff", "Unified diff"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to run"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    session = models.ForeignKey(
        PlanningSession, on_delete=models.CASCADE, related_name="implementation_checks"
    )
    """The session whose plan was checked (whose owner the check belongs to)."""
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="implementation_checks")
    """The plan version checked."""
    number = models.PositiveIntegerField()
    """1 for the plan's first check, then 2, 3… (a re-check compares with the one before)."""
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    """Who asked for the check."""
    source = models.CharField(max_length=10, choices=Source.choices)
    """What was checked: the codebase's newer version, or a diff."""
    label = models.CharField(max_length=200, blank=True)
    """What the source was, in a few words ("version 3", "fix.diff")."""
    codebase_version = models.PositiveIntegerField(null=True, blank=True)
    """The codebase version number checked (a version check), or applied to (a diff)."""
    diff = models.TextField(blank=True)
    """The diff checked (empty for a version check); capped before it is stored."""
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    """Where the check's job is."""
    progress = models.JSONField(default=dict, blank=True)
    """What the job is doing: {phase, step, steps}."""
    error = models.TextField(blank=True)
    """Why it failed (a diff that does not apply, a crash), in words for the user."""
    report = models.JSONField(default=dict, blank=True)
    """The report (conversations.implementation.verify), with `moved` since the check before."""
    judged_by = models.CharField(max_length=50, blank=True)
    """The model profile asked whether a different change is equivalent (empty: none asked)."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was asked for."""
    updated_at = models.DateTimeField(auto_now=True)
    """When the job last wrote to it (a running check that stops updating has stalled)."""
    finished_at = models.DateTimeField(null=True, blank=True)
    """When the job finished."""

    class Meta:
        ordering = ["plan", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "number"], name="unique_check_number")
        ]

    def __str__(self) -> str:
        return f"Check {self.number} of {self.plan}"
