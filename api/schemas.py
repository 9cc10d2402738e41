"""What the API returns and accepts: the JSON shapes the OpenAPI page documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import Field


class Problem(Schema):
    detail: str = Field(description="What went wrong, in words a person can act on.")


class Duplicate(Problem):
    existing: int = Field(description="The id of your codebase made from exactly these bytes.")


class CodebaseOut(Schema):
    id: int
    name: str
    status: str = Field(description="pending, indexing, ready or failed.")
    error: str
    progress: int = Field(description="Percent of indexing done.")
    progress_stage: str
    source_format: str
    file_count: int
    chunk_count: int
    total_bytes: int
    languages: dict[str, Any]
    warnings: list[Any]
    latest_version: int | None = Field(None, description="The number of the latest version.")
    uploaded_at: datetime | None
    created_at: datetime
    updated_at: datetime


class CodebaseVersionOut(Schema):
    number: int
    kind: str
    uploaded_at: datetime | None
    indexed_at: datetime
    file_count: int
    added: list[str] = Field(description="Paths added (at most 200 are listed).")
    removed: list[str]
    changed: list[str]
    added_count: int
    removed_count: int
    changed_count: int


class SessionIn(Schema):
    codebase: int = Field(description="The id of one of your ready codebases.")
    task: str = Field(description="The change to plan, as you would write it on the page.")
    mode: str = Field("planning", description="planning or debate.")
    agent_a_profile: str | None = Field(None, description="Model profile; the server's default.")
    agent_b_profile: str | None = Field(None, description="Model profile; the server's default.")
    fallback_profile: str = Field("", description="Model profile; empty for the server's.")
    max_exchanges: int | None = Field(None, description="Debate exchanges before the human.")


class ApproveIn(Schema):
    override: str = Field(
        "",
        description="Your reason to approve a proposal that breaks a critical rule of the "
        "codebase (recorded, and listed in the final plan); empty otherwise.",
    )


class StopIn(Schema):
    pass


class SessionOut(Schema):
    id: int
    codebase: int
    title: str
    task: str
    mode: str
    status: str = Field(description="running, awaiting_human, completed, stopped or failed.")
    current_node: str | None = Field(description="Where the planning workflow is.")
    agent_a_profile: str
    agent_b_profile: str
    calls_used: int
    tokens_used: int
    error: str
    latest_plan_version: int | None
    created_at: datetime
    updated_at: datetime


class PlanSummary(Schema):
    session: int
    title: str
    latest_version: int
    codebase: int
    updated_at: datetime


class PlanVersionOut(Schema):
    session: int
    version: int
    review_status: str
    author_kind: str
    note: str
    created_at: datetime
    quality: dict[str, Any] | None = Field(None, description="The plan's quality line.")


class PlanOut(PlanVersionOut):
    markdown: str = Field(description="The plan as the page's plan.md download gives it.")
    structured: dict[str, Any] = Field(description="The plan's sections as data.")
