"""`planagents`: plan a change to the code in a directory from the terminal.

    planagents plan . "add rate limiting to the API"      # in process, the embedded model
    planagents plan . "…" --server https://pa.example --token pa_…   # or PLANAGENTS_TOKEN
    planagents sync .                                     # a new version; stale plans listed
    planagents export 12 --format speckit --zip

Each command exits 1 with one line on standard error when its input is bad or refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from cli.client import ApiClient, CliError
from cli.pack import STATE_FILE, Pack, PackError, pack_directory

app = typer.Typer(
    name="planagents",
    help="Plan a code change with two LLM agents, grounded in your code, before anyone writes it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)
MODES = ("planning", "debate")
POLL_SECONDS = 1.0
"""How often the run asks how the work goes: one request a second stays well inside the API's
default rate (120 a minute per token)."""

Server = Annotated[
    str,
    typer.Option(help="A PlanAgents server's URL; without it, everything runs in this process."),
]
Token = Annotated[
    str,
    typer.Option(envvar="PLANAGENTS_TOKEN", help="An API token from the server's account page."),
]
Profile = Annotated[
    str, typer.Option(help="Model profile for both agents (fake: the scripted test provider).")
]


class Backend:
    """The API client, and in process the services the API lacks (cli.local.Local)."""

    def __init__(self, server: str, token: str, profile: str) -> None:
        from cli.local import Local

        self.server = server.rstrip("/")
        self.local: Local | None = None
        if self.server:
            if not token:
                raise CliError("--server needs a token: pass --token or set PLANAGENTS_TOKEN.")
            self.client = ApiClient(self.server, token)
        else:
            self.local = Local(profile)
            self.client = self.local.client

    def close(self) -> None:
        if self.local is not None:
            self.local.close()
        else:
            self.client.close()


@contextmanager
def backend(server: str, token: str, profile: str = "") -> Iterator[Backend]:
    opened = Backend(server, token, profile)
    try:
        yield opened
    finally:
        opened.close()


def fail(message: str) -> typer.Exit:
    console.print(f"[red]Error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(1)


def _pack(directory: Path) -> Pack:
    pack = pack_directory(directory)
    console.print(
        f"Packed {len(pack.files)} files ({pack.text_bytes / 1024:.0f} KB of text, "
        f"{len(pack.data) / 1024:.0f} KB zipped) in {pack.seconds:.2f} s; "
        f"{pack.ignored} ignored by .gitignore, {len(pack.skipped)} binary or too large.",
        highlight=False,
    )
    if pack.withheld:
        console.print(f"[yellow]Withheld {len(pack.withheld)} file(s) that look like secrets:")
        for path, why in pack.withheld:
            console.print(f"  {path}: {why}", highlight=False, markup=False)
    return pack


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _wait_indexed(client: ApiClient, codebase: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with _progress() as progress:
        bar = progress.add_task("Indexing", total=100)
        while True:
            row = client.codebase(codebase)
            stage = row.get("progress_stage") or row["status"]
            progress.update(bar, completed=row["progress"], description=f"Indexing: {stage}")
            if row["status"] == "ready":
                progress.update(bar, completed=100, description="Indexed")
                return row
            if row["status"] == "failed":
                raise CliError(f"Indexing failed: {row['error']}")
            if time.monotonic() > deadline:
                raise CliError(f"Codebase #{codebase} was not indexed within {timeout:.0f} s.")
            time.sleep(POLL_SECONDS)


def _steps(mode: str) -> list[tuple[str, str]]:
    """(node, label) of the workflow's steps, in order (agents.workflow's table)."""
    from agents.workflow import COMPLETED, NODES

    if mode == "debate":
        return []
    return [(name, node.label) for name, node in NODES.items() if name != COMPLETED]


def _follow(
    run: Backend, session: dict[str, Any], timeout: float, approve: bool = False
) -> dict[str, Any]:
    """Poll the session until it has its final plan, with a bar per workflow step (planning)
    or one for the discussion (debate); the session as it ends. In process, or with
    `approve`, the command approves at the checkpoint; else a person does, on the page."""
    steps = _steps(session["mode"])
    order = [name for name, _ in steps]
    deadline = time.monotonic() + timeout
    told = False
    with _progress() as progress:
        bars = [progress.add_task(label, total=1) for _, label in steps]
        talk = None if steps else progress.add_task("Debate", total=None)
        while True:
            session = run.client.session(session["id"])
            node = session["current_node"] or ""
            status = session["status"]
            done = status == "completed" or (
                status == "stopped" and session["latest_plan_version"] is not None
            )
            # A proposal sent back for changes runs its steps again: the bars follow it back.
            reached = len(order) if done else order.index(node) if node in order else -1
            for number, bar in enumerate(bars):
                progress.update(bar, completed=1 if number < reached else 0)
            if talk is not None:
                calls = session["calls_used"]
                progress.update(talk, description=f"Debate: {calls} model calls")
            if done:
                if talk is not None:
                    progress.update(talk, total=1, completed=1)
                return session
            if status in ("failed", "stopped"):
                raise CliError(f"Session #{session['id']} {status}: {session['error'] or status}")
            if status == "awaiting_human" and (approve or run.local is not None):
                progress.console.print(run.client.hand_over(session))
            elif status == "awaiting_human" and not told:
                told = True
                progress.console.print(
                    f"Session #{session['id']} waits for you: approve it at "
                    f"{run.server}/sessions/{session['id']}/ (or plan with --approve); the "
                    "plan is written here once you do."
                )
            if time.monotonic() > deadline:
                raise CliError(
                    f"Session #{session['id']} has no final plan after {timeout:.0f} s; "
                    f"get it later with `planagents export {session['id']} --format json`."
                )
            time.sleep(POLL_SECONDS)


def _quality_line(plan: dict[str, Any]) -> str:
    from agents.plan_quality import Quality

    try:
        return Quality.from_dict(plan["quality"]).line() if plan.get("quality") else ""
    except (TypeError, ValueError):  # a server of another version: its own fields
        return ""


def _remember(directory: Path, server: str, codebase: int) -> None:
    state = {"server": server, "codebase": codebase}
    (directory / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def _remembered(directory: Path) -> dict[str, Any]:
    path = directory / STATE_FILE
    if not path.is_file():
        return {}
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        raise CliError(f"{path} is not the JSON `planagents plan` writes; remove it.") from None
    return state if isinstance(state, dict) else {}


@app.command()
def plan(
    directory: Annotated[Path, typer.Argument(help="The code to plan against.")],
    task: Annotated[str, typer.Argument(help="The change to plan, in your words.")],
    server: Server = "",
    token: Token = "",
    mode: Annotated[str, typer.Option(help="planning or debate.")] = "planning",
    profile: Profile = "",
    out: Annotated[Path, typer.Option(help="Where plan.md and plan.json go.")] = Path("."),
    remember: Annotated[
        bool, typer.Option(help=f"Keep the codebase's id in {STATE_FILE} for `sync`.")
    ] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the plan.")] = 3600.0,
    approve: Annotated[
        bool,
        typer.Option(
            help="With --server: approve the proposal yourself here, without reading it on "
            "the session page (in process the command always does)."
        ),
    ] = False,
) -> None:
    """Pack DIRECTORY, index it, have the agents plan TASK, and write plan.md and plan.json."""
    try:
        if mode not in MODES:
            raise CliError(f"Unknown mode {mode!r}: choose planning or debate.")
        if not task.strip():
            raise CliError("Say what to plan: the task is empty.")
        directory = directory.resolve()
        pack = _pack(directory)
        out.mkdir(parents=True, exist_ok=True)
        with backend(server, token, profile) as run:
            started = time.monotonic()
            codebase = run.client.upload(directory.name or "codebase", pack.data)
            if remember:
                _remember(directory, run.server, codebase["id"])
            _wait_indexed(run.client, codebase["id"], timeout)
            indexed = time.monotonic()
            session = run.client.start_session(codebase["id"], task, mode, profile)
            console.print(f"Session #{session['id']} on codebase #{codebase['id']}.")
            session = _follow(run, session, timeout, approve)
            plan = run.client.plan(session["id"])
            data = run.client.export(session["id"], "json", as_zip=False).text
            # Written before the in-process run waits for its background jobs at the end.
            (out / "plan.md").write_text(plan["markdown"])
            (out / "plan.json").write_text(data)
            done = time.monotonic()
            console.print(
                f"Wrote {out / 'plan.md'} and {out / 'plan.json'} (plan v{plan['version']}): "
                f"indexed in {indexed - started:.1f} s, planned in {done - indexed:.1f} s.",
                highlight=False,
            )
            if line := _quality_line(plan):
                console.print(f"Checked by the app: {line}", highlight=False)
    except (CliError, PackError) as exc:
        raise fail(str(exc)) from None


@app.command()
def sync(
    directory: Annotated[Path, typer.Argument(help="The code, as it is now.")],
    codebase: Annotated[
        int | None, typer.Option(help=f"The codebase's id; the one in {STATE_FILE} if not given.")
    ] = None,
    server: Server = "",
    token: Token = "",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for indexing.")] = 3600.0,
) -> None:
    """Upload DIRECTORY as a new version of its codebase and list the plans it made stale."""
    try:
        directory = directory.resolve()
        if not directory.is_dir():
            raise CliError(f"No such directory: {directory}")
        state = _remembered(directory)
        codebase = codebase if codebase is not None else state.get("codebase")
        if not isinstance(codebase, int):
            raise CliError(
                f"No codebase to sync: run `planagents plan` in {directory} first, or pass "
                "--codebase ID."
            )
        server = server or (state.get("server") or "" if "codebase" in state else "")
        pack = _pack(directory)
        with backend(server, token) as run:
            made = run.client.new_version(codebase, directory.name or "codebase", pack.data)
            if made:
                _wait_indexed(run.client, codebase, timeout)
            version = run.client.latest_version(codebase)
            if not made:
                number = f" {version['number']}" if version is not None else ""
                console.print(
                    f"Nothing changed since version{number} of codebase #{codebase}: "
                    "no new version was made.",
                    highlight=False,
                )
            elif version is not None:
                console.print(
                    f"Codebase #{codebase} is at version {version['number']}: "
                    f"{version['added_count']} added, {version['changed_count']} changed, "
                    f"{version['removed_count']} removed.",
                    highlight=False,
                )
            # No new version: over the network there is nothing this sync changed to report.
            _report_stale(run, codebase, version if made else None)
    except (CliError, PackError) as exc:
        raise fail(str(exc)) from None


def _report_stale(run: Backend, codebase: int, version: dict[str, Any] | None) -> None:
    if run.local is not None:
        stale = [
            (p.session, p.title, p.version, p.changes) for p in run.local.stale_plans(codebase)
        ]
        heading = "went stale"
    else:
        stale = _plans_touched(run.client, codebase, version)
        heading = "rest on files this version changed"
    if not stale:
        console.print("No plan went stale.")
        return
    console.print(f"[yellow]{len(stale)} plan(s) {heading}:")
    for session, title, number, changes in stale:
        console.print(f"  #{session} v{number} {title}", highlight=False, markup=False)
        for path, said in changes:
            console.print(f"    {path}: {said}", highlight=False, markup=False)


def _plans_touched(
    client: ApiClient, codebase: int, version: dict[str, Any] | None
) -> list[tuple[int, str, int, list[tuple[str, str]]]]:
    """Over the network: the plans on `codebase` whose recorded files (the snapshot each plan
    version keeps, conversations.stale) the new version added, removed or changed. The API
    serves no stale check of its own, so this reads the version's lists against the files."""
    if version is None:
        return []
    touched = {
        **dict.fromkeys(version["changed"], "changed"),
        **dict.fromkeys(version["added"], "added"),
        **dict.fromkeys(version["removed"], "removed"),
    }
    found = []
    for summary in client.plans_of(codebase):
        plan = client.plan(summary["session"])
        snapshot = plan["structured"].get("snapshot") or {}
        files = snapshot.get("files") if isinstance(snapshot, dict) else None
        hits = [(p, touched[p]) for p in files or {} if p in touched]
        if hits:
            found.append((summary["session"], summary["title"], plan["version"], hits))
    return found


@app.command()
def export(
    session: Annotated[int, typer.Argument(help="The plan's session id.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="json, github, handoff, speckit, kiro or agents.")
    ] = "json",
    as_zip: Annotated[
        bool, typer.Option("--zip", help="The layout as a zip (speckit, kiro, agents).")
    ] = False,
    out: Annotated[
        Path | None, typer.Option(help="Write here; standard output (or a .zip here) if not.")
    ] = None,
    server: Server = "",
    token: Token = "",
) -> None:
    """Print (or write) the latest plan of SESSION in an export format."""
    try:
        with backend(server, token) as run:
            response = run.client.export(session, format, as_zip=False)
            if as_zip:
                data = _zip(run, session, format)
                target = out or Path(f"plan-{session}-{format}.zip")
                target.write_bytes(data)
                console.print(f"Wrote {target} ({len(data)} bytes).")
            elif out is not None:
                out.write_bytes(response.content)
                console.print(f"Wrote {out}.")
            else:
                typer.echo(response.text, nl=not response.text.endswith("\n"))
    except CliError as exc:
        raise fail(str(exc)) from None


def _zip(run: Backend, session: int, kind: str) -> bytes:
    response = run.client.export(session, kind, as_zip=True)
    if response.headers.get("content-type", "").split(";")[0] != "application/zip":
        raise CliError(
            f"The server at {run.server} serves no zip of the {kind} export through its API; "
            "leave out --zip, or download the zip from the plan page."
        )
    return response.content


def main() -> None:
    app()
