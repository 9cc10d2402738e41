"""The REST API (/api/v1/) as the CLI uses it: one client, over the network to a server
(`--server`) or in this very process (cli.local hands it Django's WSGI app as its transport).
Every failure becomes a CliError whose message is one line a user can act on."""

from __future__ import annotations

import time
from typing import Any

import httpx

TIMEOUT = httpx.Timeout(60.0, connect=10.0)
MAX_THROTTLED_WAIT = 30.0


class CliError(Exception):
    """Bad input or a refusal; the command prints the message and exits non-zero."""


class ApiClient:
    def __init__(
        self, base_url: str, token: str, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.base_url + "/api/v1",
            headers={"Authorization": f"Bearer {token}", "User-Agent": "planagents-cli"},
            timeout=TIMEOUT,
            transport=transport,
        )

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The response to a request that succeeded; CliError for anything else. A throttled
        request waits as long as the server asks (up to a bound) and goes again."""
        for _ in range(5):
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                raise CliError(f"Cannot reach the server at {self.base_url} ({exc}).") from None
            if response.status_code != 429:
                break
            time.sleep(min(MAX_THROTTLED_WAIT, _retry_after(response)))
        if response.is_success:
            return response
        raise CliError(self._problem(response))

    def _problem(self, response: httpx.Response) -> str:
        detail = _detail(response)
        status = response.status_code
        if status == 401:
            return (
                f"The server at {self.base_url} refused the token (401): make one on its "
                "account page (/account/tokens/) and pass it with --token or PLANAGENTS_TOKEN."
            )
        if status == 404 and not detail:
            return f"The server at {self.base_url} has no API at /api/v1/ (404)."
        return f"{detail or response.reason_phrase} ({status})"

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    # Codebases

    def upload(self, name: str, zip_bytes: bytes) -> dict[str, Any]:
        files = {"pack": (f"{name}.zip", zip_bytes, "application/zip")}
        # The same bytes again make a new codebase of their own: the CLI asked for one.
        data = {"name": name, "allow_duplicate": "true"}
        return self.request("POST", "/codebases", files=files, data=data).json()  # type: ignore[no-any-return]

    def new_version(self, codebase: int, name: str, zip_bytes: bytes) -> bool:
        """Upload a new version; False when the bytes are those already indexed (no version
        was made, the server answered 200 rather than 202)."""
        files = {"pack": (f"{name}.zip", zip_bytes, "application/zip")}
        response = self.request("POST", f"/codebases/{codebase}/versions", files=files)
        return response.status_code == 202

    def codebase(self, codebase: int) -> dict[str, Any]:
        return self.get(f"/codebases/{codebase}")  # type: ignore[no-any-return]

    def latest_version(self, codebase: int) -> dict[str, Any] | None:
        items = self.get(f"/codebases/{codebase}/versions", limit=1)["items"]
        return items[0] if items else None

    # Sessions and plans

    def start_session(self, codebase: int, task: str, mode: str, profile: str) -> dict[str, Any]:
        body: dict[str, Any] = {"codebase": codebase, "task": task, "mode": mode}
        if profile:
            body.update(agent_a_profile=profile, agent_b_profile=profile, fallback_profile=profile)
        return self.request("POST", "/sessions", json=body).json()  # type: ignore[no-any-return]

    def session(self, session: int) -> dict[str, Any]:
        return self.get(f"/sessions/{session}")  # type: ignore[no-any-return]

    def plan(self, session: int) -> dict[str, Any]:
        return self.get(f"/plans/{session}")  # type: ignore[no-any-return]

    def plans_of(self, codebase: int) -> list[dict[str, Any]]:
        """Summaries of the user's plans on `codebase` (the list is paged: read all of it)."""
        found, offset = [], 0
        while True:
            page = self.get("/plans", limit=100, offset=offset)
            found += [p for p in page["items"] if p["codebase"] == codebase]
            offset += len(page["items"])
            if not page["items"] or offset >= page["count"]:
                return found

    def hand_over(self, session: dict[str, Any]) -> str:
        """Act as the human when the agents hand over, through the API as the page's buttons
        do: approve the proposal (planning) or end the discussion (debate), so the final plan
        is written. What was done, in words."""
        if session["mode"] == "debate":
            self.request("POST", f"/sessions/{session['id']}/stop", json={})
            return "Ended the debate: writing its plan."
        self.request("POST", f"/sessions/{session['id']}/approve", json={})
        return "Approved the proposal: writing the final plan."

    def export(self, session: int, kind: str, *, as_zip: bool) -> httpx.Response:
        params = {"zip": "1"} if as_zip else None
        return self.request("GET", f"/plans/{session}/export/{kind}", params=params)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # Ninja's validation errors: a list of {loc, msg}
        return "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail)
    return " ".join(str(detail).split()) if detail else ""


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(1.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0
