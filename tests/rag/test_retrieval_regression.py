"""A tiny shop codebase where the file to change is known: it must stay at the top."""

import json

import pytest

from rag.indexing import index_codebase
from rag.retrieval import retrieve, retrieve_files

pytestmark = pytest.mark.django_db

FILES = {
    "shop/cart.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "class Cart:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def add_item(self, sku, price, quantity=1):\n"
        "        self.items.append((sku, price, quantity))\n\n"
        "    def total(self, discount_code=None):\n"
        "        subtotal = sum(price * quantity for _, price, quantity in self.items)\n"
        "        return apply_discount(subtotal, discount_code)\n"
    ),
    "shop/pricing.py": (
        "DISCOUNTS = {'SPRING': 0.1}\n\n\n"
        "def apply_discount(amount, code):\n"
        "    if code is None:\n        return amount\n"
        "    return amount * (1 - DISCOUNTS[code])\n"
    ),
    "shop/payment.py": (
        "class PaymentError(Exception):\n    pass\n\n\n"
        "def charge_card(card_number, amount):\n"
        "    if amount <= 0:\n        raise PaymentError('nothing to charge')\n"
        "    return {'card': card_number[-4:], 'amount': amount}\n"
    ),
    "shop/tests/test_cart.py": (
        "from shop.cart import Cart\n\n\n"
        "def test_total_with_discount():\n"
        "    cart = Cart()\n    cart.add_item('a', 10)\n"
        "    assert cart.total('SPRING') == 9\n"
    ),
    "CHANGELOG.md": "# Changes\n\n## 1.2\n- Cart totals accept a discount code.\n",
    "docs/discounts.md": "# Discounts\n\nPass a discount code to the cart total.\n",
}

ISSUE = """KeyError when an unknown discount code is used at checkout

Calling the cart total with a code that does not exist crashes:

```
Traceback (most recent call last):
  File "app.py", line 3, in <module>
    cart.total("WINTER")
  File "/site-packages/shop/cart.py", line 12, in total
    return apply_discount(subtotal, discount_code)
KeyError: 'WINTER'
```

Unknown codes should be ignored (no discount) instead of raising.
"""


@pytest.fixture
def shop(alice, make_codebase):
    codebase = make_codebase(alice, json.dumps({"files": FILES}).encode(), name="shop")
    index_codebase(codebase.pk)
    codebase.refresh_from_db()
    assert codebase.status == "ready", codebase.error
    return codebase


def test_the_file_with_the_bug_is_among_the_top_two_files(shop):
    files = [f.path for f in retrieve_files(shop, ISSUE, k=5)]
    assert "shop/pricing.py" in files[:2]
    assert "shop/cart.py" in files[:2]


def test_tests_docs_and_changelogs_do_not_crowd_out_the_source(shop):
    hits = retrieve(shop, ISSUE, k=3)
    assert {h.path for h in hits} <= {"shop/pricing.py", "shop/cart.py", "shop/payment.py"}


def test_a_short_question_finds_the_payment_code(shop):
    assert retrieve_files(shop, "where do we charge the credit card?", k=1)[0].path == (
        "shop/payment.py"
    )


def test_a_named_symbol_wins(shop):
    files = retrieve_files(shop, "apply_discount should round to cents", k=1)
    assert files[0].path == "shop/pricing.py"
    assert "symbols" in files[0].reason


def test_a_vietnamese_question_finds_the_same_code(shop):
    files = retrieve_files(shop, "thanh toán bằng thẻ tín dụng ở đâu?", k=1)
    assert files[0].path == "shop/payment.py"
    files = retrieve_files(shop, "lỗi khi dùng mã giảm giá không tồn tại", k=2)
    assert "shop/pricing.py" in [f.path for f in files]
