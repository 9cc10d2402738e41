"""The app under daphne, with replies queued in the scripted provider: a browser test's server.

    python tests/browser/scripted_server.py SCRIPT.json PORT

SCRIPT.json maps a profile to its replies by kind: "text" for text calls, a schema's name
("Proposal", "PlanDraft", …) for structured calls of that schema. Replies of one kind are used
in order; a call with none left (or of a kind not scripted: routing, evidence plans, …) gets
the scripted provider's default, so a workflow that grows a step keeps the script aligned.
A reply is a string, an object, or {"hold": {"text": …, "pieces": n, "name": …}}: it streams
n pieces of its text, creates `<name>.reached` next to SCRIPT.json, and streams the rest once
the test has created `<name>.release` there (agents.providers.fake.Hold, bridged to files:
the test runs in another process). Everything else is the real app: settings from the
environment, in-process jobs, the in-memory channel layer.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def bridged(hold: Any, folder: Path, name: str) -> None:
    hold.reached.wait()
    (folder / f"{name}.reached").touch()
    while not (folder / f"{name}.release").exists():
        time.sleep(0.02)
    hold.release.set()


def reply(spec: Any, folder: Path) -> Any:
    from agents.providers.fake import Hold

    if isinstance(spec, dict) and set(spec) == {"hold"}:
        hold = Hold(spec["hold"]["text"], spec["hold"]["pieces"], timeout=600)
        name = spec["hold"]["name"]
        threading.Thread(target=bridged, args=(hold, folder, name), daemon=True).start()
        return hold
    return spec


def install(script: dict[str, dict[str, list[Any]]], folder: Path) -> None:
    from agents.providers.fake import FakeProvider

    queues = {
        (profile, kind): deque(reply(spec, folder) for spec in specs)
        for profile, kinds in script.items()
        for kind, specs in kinds.items()
    }
    default = FakeProvider._next

    def scripted(self: Any, messages: Any, schema: Any) -> Any:
        queue = queues.get((self.profile, "text" if schema is None else schema.__name__))
        found = default(self, messages, schema)  # records the call; None: nothing queued there
        return queue.popleft() if queue else found

    FakeProvider._next = scripted  # type: ignore[method-assign]


def main(script_path: str, port: str) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    import django

    django.setup()
    from daphne.cli import CommandLineInterface

    script = Path(script_path)
    install(json.loads(script.read_text()), script.parent)
    if os.environ.get("PLANAGENTS_FAKE_QUEUED"):
        # The scripted model waits in the machine's line as the local model does.
        from agents.providers.fake import FakeProvider

        FakeProvider.queued = True
    CommandLineInterface().run(["-b", "127.0.0.1", "-p", port, "planagents.asgi:application"])


if __name__ == "__main__":
    main(*sys.argv[1:3])
