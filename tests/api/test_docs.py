"""The OpenAPI page at /api/v1/docs lists every endpoint, from files this server serves."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.test_authz_matrix import MATRIX, PUBLIC, _schema_path

pytestmark = pytest.mark.django_db


def test_the_schema_lists_every_operation_the_api_serves():
    schema = Client().get("/api/v1/openapi.json").json()

    listed = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    wanted = {(m, _schema_path(r)) for (m, r), row in MATRIX.items() if row.kind != PUBLIC}
    assert listed == wanted
    assert schema["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"
    every = [op for ops in schema["paths"].values() for op in ops.values()]
    assert all(op.get("security") == [{"TokenAuth": []}] for op in every)


def test_the_docs_page_loads_swagger_from_this_server_not_a_cdn():
    response = Client().get("/api/v1/docs")

    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()
    assert Client().get("/static/ninja/swagger-ui-bundle.js").status_code == 200
