"""Model rows as the API's schemas: one function per shape, shared by every route that
returns it."""

from __future__ import annotations

from typing import Any

from conversations import exports
from conversations.models import Plan, PlanningSession, PlanningState
from rag.models import Codebase, CodebaseVersion


def codebase(row: Codebase, latest: CodebaseVersion | None) -> dict[str, Any]:
    return {
        "id": row.pk,
        "name": row.name,
        "status": row.status,
        "error": row.error,
        "progress": row.progress,
        "progress_stage": row.progress_stage,
        "source_format": row.source_format,
        "file_count": row.file_count,
        "chunk_count": row.chunk_count,
        "total_bytes": row.total_bytes,
        "languages": row.languages if isinstance(row.languages, dict) else {},
        "warnings": row.warnings if isinstance(row.warnings, list) else [],
        "latest_version": latest.number if latest else None,
        "uploaded_at": row.uploaded_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def session(row: PlanningSession, latest_plan: int | None) -> dict[str, Any]:
    try:
        node: str | None = row.state.current_node
    except PlanningState.DoesNotExist:
        node = None
    return {
        "id": row.pk,
        "codebase": row.codebase_id,
        "title": row.title,
        "task": row.task,
        "mode": row.mode,
        "status": row.status,
        "current_node": node,
        "agent_a_profile": row.agent_a_profile,
        "agent_b_profile": row.agent_b_profile,
        "calls_used": row.calls_used,
        "tokens_used": row.tokens_used,
        "error": row.error,
        "latest_plan_version": latest_plan,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def plan_version(plan: Plan) -> dict[str, Any]:
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    quality = structured.get("quality")
    return {
        "session": plan.session_id,
        "version": plan.version,
        "review_status": plan.review_status,
        "author_kind": plan.author_kind,
        "note": plan.note,
        "created_at": plan.created_at,
        "quality": quality if isinstance(quality, dict) else None,
    }


def plan(plan: Plan) -> dict[str, Any]:
    structured = plan.structured if isinstance(plan.structured, dict) else {}
    # The same text as the page's plan.md: no live outside link or image in it.
    return {
        **plan_version(plan),
        "markdown": exports.safe_markdown(plan.markdown),
        "structured": structured,
    }
