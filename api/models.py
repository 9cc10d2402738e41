"""Per-user API tokens: what a script, the CLI or an MCP client shows instead of a login."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Read and write"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    """Whose data the token reaches: that user's, and nobody else's."""
    name = models.CharField(max_length=100)
    """What the owner called it ("laptop CLI", "CI"), to tell tokens apart when revoking."""
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    """read: GET only; write: may also upload, start sessions and anything else that changes."""
    digest = models.CharField(max_length=64, unique=True)
    """sha256 of the token, hex. The token itself is shown once, at creation, and never kept."""
    prefix = models.CharField(max_length=12)
    """The token's first characters, shown on the account page so its owner can recognise it."""
    created_at = models.DateTimeField(auto_now_add=True)
    """When it was made."""
    last_used_at = models.DateTimeField(null=True, blank=True)
    """When it last authenticated a request (to within a minute: see api.services.USE_RESOLUTION)."""
    revoked_at = models.DateTimeField(null=True, blank=True)
    """When its owner revoked it; a revoked token authenticates nothing from then on."""

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_live(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE
