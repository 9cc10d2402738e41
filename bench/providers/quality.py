"""Quality spot-check: three planning tasks through one profile, printed for a human to read.

    .venv/bin/python bench/providers/quality.py [--profile local] [--max-tokens 220]

Not a test and not scored: it shows what a profile writes for the agent A prompt on small,
realistic code, so profiles can be compared by eye.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")

import django  # noqa: E402

django.setup()

from agents.prompts import AGENT_A, language_rule  # noqa: E402
from agents.providers import get_provider  # noqa: E402
from agents.providers.base import CallOptions, ChatMessage  # noqa: E402

TASKS = [
    (
        "Add per-client rate limiting (60 requests/minute) to the login endpoint, answering 429 "
        "with Retry-After.",
        """### app/auth.py:1-18
```python
from flask import Blueprint, request, jsonify
from app.users import check_password, find_user

bp = Blueprint("auth", __name__)


@bp.route("/login", methods=["POST"])
def login():
    data = request.get_json(force=True)
    user = find_user(data["email"])
    if user is None or not check_password(user, data["password"]):
        return jsonify({"error": "invalid credentials"}), 401
    return jsonify({"token": user.issue_token()})
```""",
    ),
    (
        "Sửa lỗi: đăng nhập thất bại khi email có chữ hoa (User@Example.com).",
        """### app/users.py:1-14
```python
USERS = {}


def find_user(email):
    return USERS.get(email)


def register(email, password):
    USERS[email] = User(email, hash_password(password))
```""",
    ),
    (
        "Cache the result of get_report(day) for 10 minutes; invalidate it when a sale is added.",
        """### reports/service.py:1-16
```python
from reports.db import query


def get_report(day):
    rows = query("SELECT * FROM sales WHERE day = ?", day)
    return {"day": day, "total": sum(r.amount for r in rows), "count": len(rows)}


def add_sale(day, amount):
    query("INSERT INTO sales (day, amount) VALUES (?, ?)", day, amount)
```""",
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="local")
    parser.add_argument("--max-tokens", type=int, default=220)
    args = parser.parse_args()
    provider = get_provider(args.profile)
    for number, (task, code) in enumerate(TASKS, 1):
        language = "vi" if "Sửa" in task else "en"
        messages = [
            ChatMessage("system", f"{AGENT_A} {language_rule(language)}"),
            ChatMessage(
                "user",
                f"Task: {task}\n\n{code}\n\nPropose a concrete plan for the task: which functions "
                "in which files change and how, citing `path:line`, and which tests prove it. "
                f"{language_rule(language)} At most 150 words.\n\nYour proposal:",
            ),
        ]
        options = CallOptions(max_tokens=args.max_tokens, temperature=0.2)
        started = time.monotonic()
        text = "".join(provider.stream(messages, options))
        seconds = time.monotonic() - started
        print(
            f"=== task {number} ({provider.model_name}, {seconds:.0f}s, "
            f"{options.usage.completion_tokens} tokens): {task}"
        )
        print(text.strip())
        print()


if __name__ == "__main__":
    main()
