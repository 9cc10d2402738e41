"""`manage.py mcp`: the MCP server over stdio, for a coding agent on this machine.

It acts for the owner of the API token in PLANAGENTS_TOKEN (its scope and revocation apply,
checked at every call), or for `--user NAME`: an operator who can run manage.py can read
the database anyway, so naming a user gives nothing away, and it needs no token for a local
setup. Standard output is the protocol's: nothing else may print there."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_server.identity import TOKEN_ENV, NotAuthenticated, token_caller, user_caller
from mcp_server.server import build


class Command(BaseCommand):
    help = "Serve PlanAgents' MCP tools over stdio (for Claude Code, Cursor, Codex, Cline…)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--user", default="", help=f"Act for this user (else the token in ${TOKEN_ENV})."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["user"].strip()
        secret = os.environ.get(TOKEN_ENV, "").strip()
        if bool(username) == bool(secret):
            raise CommandError(
                f"Say who the server acts for: --user NAME or ${TOKEN_ENV}, not both."
            )
        try:
            if username:
                user_caller(username)
            else:
                token_caller(secret, local=True)
        except NotAuthenticated as exc:
            raise CommandError(str(exc)) from None

        def identify(request: Any) -> Any:
            return user_caller(username) if username else token_caller(secret, local=True)

        build(identify).run("stdio")
