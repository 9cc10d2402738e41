"""Finishing a plan on its page, the use cases: approve a section, edit it by hand (with a
preview), or ask Agent A to regenerate it with an instruction. What a section is, and how a
new version is saved, is agents.plan_sections."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.plan import build_version
from agents.plan_sections import (
    MAX_INSTRUCTION_CHARS,
    REGENERATE_PREFIX,
    SectionError,
    apply_text,
    plain,
    save_version,
    section_info,
    section_text,
)
from conversations import plan_comments, services
from conversations.models import Message, Plan, PlanningSession
from conversations.plan_diff import sections
from conversations.store import add_message
from conversations.tasks import regenerate_plan_section
from planagents.jobs import dispatch

# ---------------------------------------------------------------- use cases


def _latest_plan(user: Any, session_id: int, version: int) -> Plan:
    """The session's plan `version` for its owner, which must be the latest one."""
    session: PlanningSession = services.get_session_for(user, session_id)
    plan = Plan.objects.filter(session=session, version=version).first()
    if plan is None:
        raise services.SessionNotFound("That plan version does not exist.")
    latest = Plan.objects.filter(session=session).order_by("-version").first()
    if latest is not None and latest.version != plan.version:
        raise SectionError(
            f"v{plan.version} is not the latest version (v{latest.version} is); "
            "edit the latest one."
        )
    return plan


def edit_section(user: Any, session_id: int, version: int, key: str, text: str) -> Plan:
    """A human's edit of one section, saved as a new version."""
    base = _latest_plan(user, session_id, version)
    data = apply_text(base.structured, key, text)
    if section_text(data, key) == section_text(base.structured, key):
        raise SectionError("Nothing changed in that section.")
    label = section_info(base.structured, key).label
    return save_version(base, data, kind=Plan.Author.HUMAN, author=user, note=f"Edited {label}")


def preview_section(user: Any, session_id: int, version: int, key: str, text: str) -> str:
    """The markdown the edited section would render to (nothing saved)."""
    base = _latest_plan(user, session_id, version)
    data = apply_text(base.structured, key, text)
    markdown, _ = build_version(
        plain(data), base.session.codebase, title=base.session.title, task=base.session.task
    )
    heading = section_info(data, key).heading
    body = next((s.body for s in sections(markdown) if s.title == heading), "")
    return f"## {heading}\n\n{body}\n"


def approve_section(user: Any, session_id: int, version: int, key: str) -> Plan:
    """Mark one section of the latest version approved (idempotent)."""
    base = _latest_plan(user, session_id, version)
    section_info(base.structured, key)
    with transaction.atomic():
        plan = Plan.objects.select_for_update().get(pk=base.pk)
        if key not in (plan.approved_sections or []):
            plan.approved_sections = [*(plan.approved_sections or []), key]
            plan.save(update_fields=["approved_sections"])
    return plan


def request_regeneration(
    user: Any,
    session_id: int,
    version: int,
    key: str,
    instruction: str,
    *,
    with_comments: bool = False,
) -> Message:
    """Ask Agent A to rewrite one section; the turn runs as a job and streams on the session
    page. The request is a message in the transcript: the job reads it, and its seq names the
    turn (so a re-run of the job replaces its reply rather than writing a second one).

    `with_comments`: the section's open comments (conversations.plan_comments.open_threads) go
    into the instruction the prompt holds, each with its anchor, and which ones is recorded; the
    typed instruction may then be empty."""
    base = _latest_plan(user, session_id, version)
    label = section_info(base.structured, key).label
    instruction = " ".join((instruction or "").split())
    if len(instruction) > MAX_INSTRUCTION_CHARS:
        raise SectionError(f"Keep the instruction under {MAX_INSTRUCTION_CHARS} characters.")
    found = plan_comments.open_threads(base.session, base, key) if with_comments else []
    if with_comments and not found:
        raise SectionError(f"{label} has no open comments to regenerate with.")
    if found:
        asked = instruction or "Address the open review comments below."
        instruction = f"{asked}\n\n{plan_comments.prompt_block(found)}"
    if not instruction:
        raise SectionError("Say what should change in the section (e.g. “split step 3”).")
    with transaction.atomic():
        message = add_message(
            session_id,
            role=Message.Role.USER,
            content=f"{REGENERATE_PREFIX}{label} of plan v{base.version}: {instruction}",
            data={"regenerate": {"plan": base.pk, "section": key, "instruction": instruction}},
        )
        if found:
            plan_comments.record_request(base.session, base, key, message, found)
        dispatch(regenerate_plan_section, message.pk)
    return message
