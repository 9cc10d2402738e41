"""What the MCP tests share: a server's environment (its own SQLite data dir, the scripted
provider as every profile's default, never the embedded LLM), two users with tokens made in
its database, a 10-file codebase as a zip, and helpers to read a tool's result."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from tests.api.server import manage

TASK = "Add a discount to the cart total, with a test for it"
FILES = {
    "shop/__init__.py": "",
    "shop/cart.py": (
        "from shop.prices import price_of\n\n\nclass Cart:\n    def __init__(self):\n"
        "        self.items = []\n\n    def add(self, sku, qty=1):\n"
        "        self.items.append((sku, qty))\n\n    def total(self):\n"
        "        return sum(price_of(sku) * qty for sku, qty in self.items)\n"
    ),
    "shop/prices.py": "PRICES = {'apple': 3, 'pear': 4}\n\n\ndef price_of(sku):\n    return PRICES[sku]\n",
    "shop/checkout.py": "from shop.cart import Cart\n\n\ndef checkout(cart: Cart):\n    return cart.total()\n",
    "shop/discounts.py": "def no_discount(total):\n    return total\n",
    "shop/api.py": "from shop.checkout import checkout\n\n\ndef handle(cart):\n    return {'total': checkout(cart)}\n",
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\ndef test_total():\n    cart = Cart()\n"
        "    cart.add('apple', 2)\n    assert cart.total() == 6\n"
    ),
    "tests/test_prices.py": "from shop.prices import price_of\n\n\ndef test_price():\n    assert price_of('pear') == 4\n",
    "README.md": "# Shop\n\nA tiny shop: carts, prices, checkout.\n",
    "pyproject.toml": "[project]\nname = 'shop'\nversion = '0.1'\n",
}
MAKE_USERS = (
    "from django.contrib.auth import get_user_model; from api.services import create_token; "
    "U = get_user_model(); o = U.objects.create_user('owner'); x = U.objects.create_user('other'); "
    "print(create_token(o, 'agent', 'write').secret, create_token(o, 'look', 'read').secret, "
    "create_token(x, 'theirs', 'write').secret)"
)


def shop_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in FILES.items():
            archive.writestr(f"shop-main/{path}", text)
    return buffer.getvalue()


def shop_repository(folder: Path) -> Path:
    """A local git repository holding the shop's files in one commit on `main`."""
    folder.mkdir()
    for path, text in FILES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "shop"], check=True)
    return folder


def server_env(data: Path) -> dict[str, str]:
    """The environment of a server on `data`, migrated: the scripted provider, no LLM."""
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(data), "DJANGO_DEBUG": "0"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DATABASE_URL", None)  # its own SQLite file, whatever the test pass
    env.pop("REDIS_URL", None)
    env.update(
        {
            "PLANAGENTS_FAKE_LLM": "1",
            "PLANAGENTS_DEFAULT_PROFILE": "fake",
            "PLANAGENTS_FALLBACK_PROFILE": "fake-backup",
            "PLANAGENTS_FAKE_LLM_DELAY": "0",
            "HF_HUB_OFFLINE": "1",
        }
    )
    manage(env, "migrate", "--noinput")
    return env


def make_users(env: dict[str, str]) -> tuple[str, str, str]:
    """(the owner's write token, the owner's read token, the other user's write token)."""
    write, read, others = manage(env, "shell", "-c", MAKE_USERS).split()[-3:]
    return write, read, others


def data(result: CallToolResult) -> Any:
    """A successful tool call's structured result (its JSON text when it has none)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        found = result.structured_content
        return found.get("result", found) if set(found) == {"result"} else found
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def error(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)
