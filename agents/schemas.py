"""Structured replies the agents produce, as Pydantic models (their JSON schema constrains the
model's output: a grammar for llama.cpp, response_format for remote providers)."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from rag.paths import InvalidPath, clean


class TurnSignal(BaseModel):
    """What a debating agent wants to happen after its reply."""

    signal: Literal["CONTINUE", "HANDOVER", "STOP"] = Field(
        description="CONTINUE: the other agent should answer. HANDOVER: the human should decide "
        "now. STOP: the discussion is finished."
    )
    reason: str = Field(description="One short sentence explaining the choice.", max_length=200)


class FileChange(BaseModel):
    path: str = Field(
        description="Repository path, exactly as shown in the code context.", max_length=200
    )
    action: Literal["modify", "create", "delete"] = Field(description="What happens to the file.")
    reason: str = Field(description="Why this file changes.", max_length=200)


class ProposalStep(BaseModel):
    title: str = Field(description="The step in a few words.", max_length=100)
    detail: str = Field(description="What to do, citing code as path:line.", max_length=400)
    files: list[str] = Field(
        default_factory=list, description="Paths this step touches.", max_length=5
    )


class Proposal(BaseModel):
    """Agent A's proposed change, checked by validate_proposal."""

    summary: str = Field(
        description="Two or three sentences: what changes and why.", max_length=800
    )
    steps: list[ProposalStep] = Field(description="Ordered implementation steps.", max_length=6)
    files: list[FileChange] = Field(description="Every file the change touches.", max_length=8)


class Effort(BaseModel):
    size: Literal["S", "M", "L", "XL"] = Field(description="T-shirt size of the whole change.")
    estimate: str = Field(
        description="Rough time for one developer, e.g. '2-3 days'.", max_length=60
    )


class PlanDraft(BaseModel):
    """The final implementation plan written by finalize_plan."""

    summary: str = Field(
        description="What the change does and why, in a short paragraph.", max_length=1000
    )
    # Early, so a reply cut off at its token limit in its last lists still has it (salvage).
    effort: Effort
    decisions: list[Annotated[str, Field(max_length=300)]] = Field(
        description="Design decisions taken, each with its reason.", max_length=5
    )
    steps: list[ProposalStep] = Field(
        description="Ordered steps, each citing code as path:line.", max_length=8
    )
    files: list[FileChange] = Field(description="Every file touched.", max_length=10)
    testing: list[Annotated[str, Field(max_length=300)]] = Field(
        description="How to test the change.", max_length=5
    )
    risks: list[Annotated[str, Field(max_length=300)]] = Field(
        description="What could go wrong and how to mitigate it.", max_length=5
    )


# ------------------------------------------------------------------ files held to real paths


class NewFile(BaseModel):
    """A file the change creates: the one place a plan may name a path the codebase lacks."""

    path: str = Field(description="Repository path of the new file.", max_length=200)
    reason: str = Field(description="Why this file is needed.", max_length=200)

    @field_validator("path")
    @classmethod
    def _usable(cls, value: str) -> str:
        try:
            return clean(value)
        except InvalidPath as exc:
            raise ValueError(f"not a usable path: it {exc.reason}") from None


ExistingAction = Literal["modify", "delete"]


NO_SYMBOL = "none"
"""A step's `symbol` when it changes no definition the agents were shown (new code)."""


@lru_cache(maxsize=32)
def with_file_choices(
    schema: type[Proposal] | type[PlanDraft],
    candidates: tuple[str, ...],
    symbols: tuple[str, ...] = (),
) -> type[BaseModel]:
    """`schema` whose existing files must be one of `candidates` (real paths, from the
    evidence and retrieval): a JSON-schema enum, so the local model's grammar cannot write
    another path. New files go in `new_files`. With `symbols` (definitions in the code the
    agents were shown), each step also names the one it changes, from that enum or "none";
    `agents.citations.cite_symbols` turns the name into its `path:line`. `merge_new_files`
    turns a reply back into the plain schema's shape."""
    choice = Literal.__getitem__(candidates)  # type: ignore[attr-defined]
    existing = create_model(
        "ExistingFileChange",
        __base__=FileChange,
        path=(choice, Field(description="One of the codebase's files.")),  # type: ignore[arg-type]
        action=(ExistingAction, Field(description="What happens to the file.")),
    )
    new_max = 4
    steps: dict[str, Any] = {}
    if symbols:
        steps["steps"] = (list[_step_with_symbol(symbols)], _steps_field(schema))  # type: ignore[misc]
    return create_model(  # type: ignore[call-overload, no-any-return]
        schema.__name__,
        __base__=schema,
        **steps,
        files=(
            list[existing],  # type: ignore[valid-type]
            Field(description="Every existing file the change touches.", max_length=8),
        ),
        new_files=(
            list[NewFile],
            Field(
                default_factory=list,
                description="Files the change creates (only if really new).",
                max_length=new_max,
            ),
        ),
    )


def _step_with_symbol(symbols: tuple[str, ...]) -> type[BaseModel]:
    """A step that names, right after its title, the definition it changes: the model commits
    to real code before it writes the detail."""
    names = tuple(dict.fromkeys(n for n in symbols if n != NO_SYMBOL))
    choice = Literal.__getitem__((*names, NO_SYMBOL))  # type: ignore[attr-defined]
    fields = ProposalStep.model_fields
    return create_model(
        "GroundedStep",
        title=(str, fields["title"]),
        symbol=(  # type: ignore[arg-type]
            choice,
            Field(
                description="The function or class of the code shown that this step changes; "
                '"new definition in <file>" when the step adds a new function or class to that '
                f'file; "{NO_SYMBOL}" when it changes no definition.'
            ),
        ),
        detail=(str, fields["detail"]),
        files=(list[str], fields["files"]),
    )


def _steps_field(schema: type[BaseModel]) -> Any:
    original = schema.model_fields["steps"]
    limit = next((m.max_length for m in original.metadata if hasattr(m, "max_length")), None)
    return Field(description=original.description, max_length=limit)


def merge_new_files(data: dict[str, Any]) -> dict[str, Any]:
    """A reply of a `with_file_choices` schema in the plain schema's shape (new files become
    `create` entries of `files`)."""
    if "new_files" not in data:
        return data
    merged = {k: v for k, v in data.items() if k != "new_files"}
    created = [
        {"path": f.get("path", ""), "action": "create", "reason": f.get("reason", "")}
        for f in data.get("new_files") or []
        if isinstance(f, dict)
    ]
    merged["files"] = [*(data.get("files") or []), *created]
    return merged
