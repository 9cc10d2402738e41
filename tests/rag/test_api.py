"""rag.api indexes a pack into a folder and ranks it with no database (pytest-django refuses
any query here: no test in this file is marked django_db)."""

import json

import pytest

from rag import api, embeddings, index
from rag.query import analyze

FILES = {
    "shop/__init__.py": "from shop.cart import Cart\nfrom shop.pricing import apply_discount\n",
    "shop/cart.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "class Cart:\n"
        "    def __init__(self):\n        self.items = []\n\n"
        "    def total(self, discount_code=None):\n"
        "        subtotal = sum(price for _, price in self.items)\n"
        "        return apply_discount(subtotal, discount_code)\n"
    ),
    "shop/pricing.py": (
        "DISCOUNTS = {'SPRING': 0.1}\n\n\n"
        "def apply_discount(amount, code):\n"
        "    if code is None:\n        return amount\n"
        "    return amount * (1 - DISCOUNTS[code])\n"
    ),
    "shop/payment.py": (
        "def charge_card(card_number, amount):\n"
        "    return {'card': card_number[-4:], 'amount': amount}\n"
    ),
    "shop/tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_total():\n    Cart()\n",
    "vendor/fancylib/pricing.py": "def apply_discount(amount, code):\n    return amount\n",
    "static/app.min.js": "!function(){" + "var apply_discount=1;" * 300 + "}();\n",
}
PACK = json.dumps({"files": FILES}).encode()


@pytest.fixture
def built(tmp_path):
    return api.index_pack(PACK, tmp_path / "idx")


def test_it_indexes_a_pack_given_as_bytes_or_a_path(tmp_path):
    (tmp_path / "shop.json").write_bytes(PACK)
    from_path = api.index_pack(tmp_path / "shop.json", tmp_path / "a")
    from_bytes = api.index_pack(PACK, tmp_path / "b")
    assert [r.path for r in from_path.records] == [r.path for r in from_bytes.records]
    assert (tmp_path / "a" / index.MAP_FILE).exists()


def test_every_source_chunk_gets_a_vector_and_nothing_else_does(built):
    ordinal, source = 0, set()
    for record in built.records:
        for _ in record.chunks:
            if record.role == "source":
                source.add(ordinal)
            ordinal += 1
    assert set(built.dense_ordinals) == source
    assert built.roles["vendored"] == 1 and built.roles["generated"] == 1


def test_it_ranks_files_with_each_signals_rank_and_score(built):
    files = api.CodeIndex(built.folder).rank_files("apply_discount raises KeyError", k=3)
    assert files[0].path == "shop/pricing.py"
    assert files[0].signals["symbols"][0] == 1 and "symbols" in files[0].reasons
    assert all(f.role == "source" for f in files[:2])


def test_it_ranks_chunks_with_their_real_lines(built):
    [hit] = api.CodeIndex(built.folder).rank_chunks("where do we charge the card?", k=1)
    assert hit.path == "shop/payment.py"
    lines = FILES[hit.path].split("\n")
    assert hit.text == "\n".join(lines[hit.start_line - 1 : hit.end_line])


def test_it_embeds_the_analysed_query_not_the_raw_text(built, monkeypatch):
    seen = []
    real = embeddings.embed

    def embed(texts, batch_size=embeddings.BATCH_SIZE):
        seen.extend(texts)
        return real(texts, batch_size)

    monkeypatch.setattr(embeddings, "embed", embed)
    query = "Discount fails\n\nINSTALLED VERSIONS\nnumpy: 1.24.2\npandas: 2.0.1\n"
    api.CodeIndex(built.folder).rank_files(query)
    assert seen == [analyze(query).text] and "numpy" not in seen[0]


def test_a_rebuild_reuses_known_vectors(tmp_path):
    known: dict = {}
    first = api.index_pack(PACK, tmp_path / "one", known=known)
    again = api.index_pack(PACK, tmp_path / "two", known=known)
    assert first.computed == len(first.dense_ordinals) > 0
    assert again.computed == 0


def test_the_lexical_side_answers_before_the_vectors_are_in(tmp_path, monkeypatch):
    monkeypatch.setattr(api, "BLOCK", 2)
    folder = tmp_path / "idx"
    during = []

    def progress(done, total):
        if not during:  # the first block is being written: ask the folder now
            rows = index.load_dense(folder)
            during.append((rows.ntotal if rows is not None else 0, total))
            during.append(api.CodeIndex(folder).rank_files("apply_discount", k=1)[0].path)

    api.index_pack(PACK, folder, progress=progress)
    (rows, total), first = during
    assert rows < total
    assert first == "shop/pricing.py"
    assert index.load_dense(folder).ntotal == total


def test_the_uploaders_overrides_change_roles(tmp_path):
    built = api.index_pack(PACK, tmp_path / "idx", role_overrides={"vendor/": "source"})
    roles = {r.path: r.role for r in built.records}
    assert roles["vendor/fancylib/pricing.py"] == "source"


def test_an_index_without_vectors_still_ranks(tmp_path):
    built = api.index_pack(PACK, tmp_path / "idx", embed=False)
    assert built.dense_ordinals == [] and built.computed == 0
    assert api.CodeIndex(built.folder).rank_files("charge_card")[0].path == "shop/payment.py"


def test_nothing_is_ranked_for_an_empty_query_or_a_missing_index(built, tmp_path):
    assert api.CodeIndex(built.folder).rank_files("   ") == []
    assert api.CodeIndex(tmp_path / "nowhere").rank_files("cart") == []
