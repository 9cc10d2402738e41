from django.conf import settings
from django.db import models


class Codebase(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be indexed"
        INDEXING = "indexing", "Indexing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="codebases"
    )
    """Who uploaded it; only they can see it or plan on it."""
    name = models.CharField(max_length=200)
    """A human name for the codebase, from the form or the upload's file name."""
    source_format = models.CharField(max_length=40, blank=True)
    """How the upload was packed, detected when parsed (e.g. repomix-xml, repomix-json, zip)."""
    upload_path = models.CharField(max_length=500, blank=True)
    """Where the raw upload is kept on disk, relative to DATA_DIR, until it is indexed."""
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    """Where the codebase is in its life: pending → indexing → ready (or failed)."""
    error = models.TextField(blank=True)
    """Why indexing failed, in words the uploader can act on."""
    progress = models.PositiveSmallIntegerField(default=0)
    """Indexing progress in percent, for the upload page's bar."""
    progress_stage = models.CharField(max_length=40, blank=True)
    """The step indexing is on now (parsing, chunking, embedding, indexing)."""
    file_count = models.PositiveIntegerField(default=0)
    """How many files the pack holds."""
    chunk_count = models.PositiveIntegerField(default=0)
    """How many chunks were embedded and indexed."""
    total_bytes = models.PositiveBigIntegerField(default=0)
    """Size of all file contents, in bytes."""
    languages = models.JSONField(default=dict, blank=True)
    """Detected languages and how many files each has, e.g. {"python": 12}."""
    content_hash = models.CharField(max_length=64, blank=True)
    """sha256 over the sorted (path, file sha256) pairs: equal packs have equal hashes."""
    upload_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    """sha256 of the uploaded bytes (parts in order), to recognise the same pack uploaded twice."""
    embedding_model = models.CharField(max_length=100, blank=True)
    """Which sentence encoder produced the vectors in the index."""
    warnings = models.JSONField(default=list, blank=True)
    """Things the uploader should know about the pack (files its listing names but it lacks, …)."""
    role_overrides = models.JSONField(default=dict, blank=True)
    """The uploader's own roles by path or folder prefix, e.g. {"packages/lib/": "vendored"}."""
    uploaded_at = models.DateTimeField(null=True, blank=True)
    """When the upload it keeps (the latest version) was uploaded; empty for codebases
    uploaded before this was recorded."""
    git_url = models.CharField(max_length=2000, blank=True)
    """The git repository it was added from (a URL, or a local path where allowed); empty
    for an uploaded codebase. Sync fetches it again."""
    git_ref = models.CharField(max_length=200, blank=True)
    """The branch, tag or commit it follows; empty for the repository's default branch."""
    git_commit = models.CharField(max_length=64, blank=True)
    """The commit last fetched (the one indexed, once indexing is done)."""
    git_fetched_at = models.DateTimeField(null=True, blank=True)
    """When the repository was last fetched."""
    git_error = models.TextField(blank=True)
    """Why the last fetch failed, in words the user can act on; empty when it did not."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was first uploaded."""
    updated_at = models.DateTimeField(auto_now=True)
    """When it last changed."""

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_ready(self) -> bool:
        return self.status == self.Status.READY


class CodeFile(models.Model):
    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="files")
    """The codebase this file belongs to."""
    path = models.CharField(max_length=1000)
    """Path inside the repository, with forward slashes and no leading slash."""
    language = models.CharField(max_length=40, blank=True)
    """Language guessed from the file name (python, javascript, markdown, …)."""
    role = models.CharField(max_length=20, default="source")
    """What the file is for: source, test, docs, config, generated, vendored or data."""
    size = models.PositiveIntegerField(default=0)
    """Size of the content in bytes (UTF-8)."""
    line_count = models.PositiveIntegerField(default=0)
    """Number of lines in the content."""
    sha256 = models.CharField(max_length=64)
    """sha256 of the content, to spot changed files on re-upload."""
    withheld_reason = models.CharField(max_length=200, blank=True)
    """Why the file is kept out of every prompt (it looks like it holds a secret); empty if not."""
    content = models.TextField()
    """The file's text, so agents and people can read the exact lines a plan cites."""

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["codebase", "path"], name="unique_file_path")
        ]

    def __str__(self) -> str:
        return self.path


class CodebaseVersion(models.Model):
    """One version of a codebase's code, recorded when its index was replaced by it: what it
    changed, file by file, against the version before (by the files' sha256). The index keeps
    only the latest version's code; this row keeps what changed, not the old code."""

    class Kind(models.TextChoices):
        FIRST = "first", "First upload"
        UPLOAD = "upload", "New version"
        RECORDED = "recorded", "Recorded when version history began"

    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="versions")
    """The codebase this is a version of."""
    number = models.PositiveIntegerField()
    """1, 2, 3… in the order the versions were indexed."""
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.UPLOAD)
    """First upload, a new version compared with the one before, or the code as it stood
    when versions began to be recorded (nothing to compare with)."""
    upload_sha256 = models.CharField(max_length=64, blank=True)
    """sha256 of the uploaded bytes this version was indexed from."""
    content_hash = models.CharField(max_length=64, blank=True)
    """The codebase's content hash with this version indexed (Codebase.content_hash)."""
    uploaded_at = models.DateTimeField(null=True, blank=True)
    """When its bytes were uploaded; empty when that was not recorded."""
    indexed_at = models.DateTimeField()
    """When it replaced the version before in the index: sessions read it from then on."""
    file_count = models.PositiveIntegerField(default=0)
    """How many files this version holds."""
    added = models.JSONField(default=list, blank=True)
    """Paths of the files new in this version (the first MAX_LISTED)."""
    removed = models.JSONField(default=list, blank=True)
    """Paths of the files the version before had and this one lacks (the first MAX_LISTED)."""
    changed = models.JSONField(default=list, blank=True)
    """Paths of the files in both whose content differs (the first MAX_LISTED)."""
    added_count = models.PositiveIntegerField(default=0)
    """How many files were added (the list may be cut)."""
    removed_count = models.PositiveIntegerField(default=0)
    """How many files were removed (the list may be cut)."""
    changed_count = models.PositiveIntegerField(default=0)
    """How many files changed (the list may be cut)."""

    MAX_LISTED = 5000

    class Meta:
        ordering = ["codebase", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["codebase", "number"], name="unique_codebase_version")
        ]

    def __str__(self) -> str:
        return f"{self.codebase} v{self.number}"

    @property
    def touched_count(self) -> int:
        """Files added, removed or changed."""
        return self.added_count + self.removed_count + self.changed_count

    @property
    def change_summary(self) -> str:
        """ "2 added, 1 removed, 4 modified", naming only what happened."""
        parts = [
            f"{count} {word}"
            for count, word in (
                (self.added_count, "added"),
                (self.removed_count, "removed"),
                (self.changed_count, "modified"),
            )
            if count
        ]
        return ", ".join(parts)

    @property
    def compared(self) -> bool:
        """Whether it was compared with a version before (so its lists mean something)."""
        return self.kind == self.Kind.UPLOAD

    @property
    def cut(self) -> bool:
        """Whether a list holds fewer paths than its count."""
        return (
            len(self.added) < self.added_count
            or len(self.removed) < self.removed_count
            or len(self.changed) < self.changed_count
        )


class Chunk(models.Model):
    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="chunks")
    """The codebase this chunk belongs to (denormalised for fast lookups by vector id)."""
    file = models.ForeignKey(CodeFile, on_delete=models.CASCADE, related_name="chunks")
    """The file the chunk was cut from."""
    ordinal = models.PositiveIntegerField()
    """Position of the chunk's vector in the codebase's FAISS index."""
    start_line = models.PositiveIntegerField()
    """First line of the chunk in its file, counting from 1."""
    end_line = models.PositiveIntegerField()
    """Last line of the chunk in its file, inclusive."""
    symbols = models.JSONField(default=list, blank=True)
    """Names of the definitions (functions, classes) the chunk holds."""
    text = models.TextField()
    """The chunk's text exactly as it stands in the file."""

    class Meta:
        ordering = ["codebase", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["codebase", "ordinal"], name="unique_chunk_ordinal")
        ]

    def __str__(self) -> str:
        return f"{self.file.path}:{self.start_line}-{self.end_line}"


class Rule(models.Model):
    """A planning rule of a codebase: every proposal and final plan is checked against it."""

    class Severity(models.TextChoices):
        CRITICAL = "critical", "Critical (blocks approval)"
        NORMAL = "normal", "Normal"

    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="rules")
    """The codebase the rule applies to."""
    text = models.TextField()
    """The rule in words; `@file:path` names a file whose text is shown with it."""
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.NORMAL)
    """Critical: a plan breaking it waits for the human to override it, with a reason."""
    enabled = models.BooleanField(default=True)
    """Whether the rule reaches prompts and checks; detected rules are disabled, not deleted."""
    source = models.CharField(max_length=1000, blank=True)
    """The file it was detected in (AGENTS.md, CONTRIBUTING.md, …); empty when user-written."""
    position = models.PositiveIntegerField(default=0)
    """Order among the rules detected in the same file."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was written or detected."""
    updated_at = models.DateTimeField(auto_now=True)
    """When it last changed."""

    class Meta:
        ordering = ["codebase", "source", "position", "pk"]

    def __str__(self) -> str:
        return self.text[:60]


class Pin(models.Model):
    """Context pinned to a codebase: every new session's agents are shown it."""

    class Kind(models.TextChoices):
        FILE = "file", "File"
        SNIPPET = "snippet", "Snippet"
        NOTE = "note", "Note"

    codebase = models.ForeignKey(Codebase, on_delete=models.CASCADE, related_name="pins")
    """The codebase the pin belongs to."""
    kind = models.CharField(max_length=10, choices=Kind.choices)
    """A file (or some of its lines), a snippet of code, or a note in words."""
    path = models.CharField(max_length=1000, blank=True)
    """The pinned file's path (file pins), or where a snippet comes from (optional)."""
    start_line = models.PositiveIntegerField(null=True, blank=True)
    """First pinned line of the file, counting from 1; empty: from the start."""
    end_line = models.PositiveIntegerField(null=True, blank=True)
    """Last pinned line, inclusive; empty: to the end (within the prompt cap)."""
    text = models.TextField(blank=True)
    """The snippet's code or the note's words; empty for file pins."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was pinned."""

    class Meta:
        ordering = ["codebase", "pk"]

    def __str__(self) -> str:
        return f"{self.kind}: {self.path or self.text[:40]}"
