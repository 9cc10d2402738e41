"""A Vietnamese debate stays Vietnamese, and its agents' claims that code is missing are checked
(issue 19, item 12): every debate turn's prompt and the stop summary's carry the Vietnamese
rule; a reply in English is redone once with a correction, then flagged, in debate mode as in
planning mode; a reply saying a class the codebase defines "does not exist" is flagged with
where it is defined, and the stop summary does not repeat the claim as fact."""

from __future__ import annotations

import pytest

from agents import debate, summary
from agents.planning import nodes
from agents.providers.fake import FakeProvider
from conversations import services
from conversations.models import Message, PlanningSession, PlanningState
from tests.scripted import NO_LOOKUPS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("jobs_drained")]

TASK = "Sửa lớp TokenStore để xoá các mã thông báo cũ hơn một ngày; hiện giờ chúng không bao giờ hết hạn"
RULE = "Write your answer in Vietnamese."
CONTINUE = {"signal": "CONTINUE", "reason": "Agent B should answer."}
STOP = {"signal": "STOP", "reason": "Settled."}

A_VI = (
    "Tôi đề xuất thêm thời điểm cấp vào mỗi mã thông báo trong lớp TokenStore tại "
    "`todo/auth.py:1`, rồi xoá những mã cũ hơn một ngày khi tra cứu."
)
B_VI = (
    "Đề xuất này quên những mã thông báo đã được cấp trước khi nâng cấp, và chưa có kiểm thử "
    "nào cho trường hợp hết hạn; cần thêm một kiểm thử."
)
A_EN = (
    "I propose to store the issue time with every token in TokenStore and to drop the tokens "
    "older than one day whenever a token is looked up."
)
SUMMARY_VI = "## Đề xuất\n- Thêm thời điểm cấp cho mỗi mã thông báo trong `todo/auth.py`."
ABSENT_VI = (
    "Lớp `TokenStore` không tồn tại trong mã nguồn này, nên cần tạo một lớp mới để lưu các mã "
    "thông báo cùng thời điểm cấp của chúng."
)


@pytest.fixture
def vi_session(user, codebase, monkeypatch):
    """A Vietnamese debate whose turns the test runs itself."""
    monkeypatch.setattr(services, "_dispatch_run", lambda session_id: None)
    session = services.start_session(
        user, codebase=codebase, task=TASK, mode="debate",
        agent_a_profile="fake", agent_b_profile="fake", max_exchanges=1,
    )  # fmt: skip
    assert session.language == "vi"
    return session


def agent_turns(session):
    return list(session.messages.filter(role=Message.Role.AGENT, node="").order_by("seq"))


def test_every_debate_turn_and_the_stop_summary_carry_the_vietnamese_rule(vi_session):
    FakeProvider.script("fake", NO_LOOKUPS, A_VI, CONTINUE, B_VI, STOP, SUMMARY_VI)
    assert debate.run_debate(vi_session.pk) == debate.FINISHED
    written = summary.write_summary(PlanningSession.objects.get(pk=vi_session.pk))
    assert "Thêm thời điểm cấp" in written.content
    texts = FakeProvider.calls("fake", text=True)
    assert len(texts) == 3  # A's turn, B's turn, the summary: no redo was needed
    for call in texts:
        # In the system prompt and again last, right before the cue, where small models look.
        assert RULE in call.messages[0].content, call.request[-200:]
        assert RULE in call.request, call.request[-200:]
    assert (
        texts[-1].request.rstrip().endswith("keep code, file paths and names as they are written.")
    )
    # Agent A's evidence plan is asked in Vietnamese too.
    assert RULE in FakeProvider.latest(schema="EvidencePlan").request


def test_a_debate_reply_in_english_is_redone_once_in_vietnamese(vi_session):
    FakeProvider.script("fake", NO_LOOKUPS, A_EN, A_VI, CONTINUE, B_VI, STOP)
    debate.run_debate(vi_session.pk)
    first = agent_turns(vi_session)[0]
    assert first.content == A_VI
    assert first.data["discarded"] == [
        {"reason": "it was not in the language of the task", "text": A_EN}
    ]
    redo = FakeProvider.calls("fake", text=True)[1]
    assert "Your previous reply was not in Vietnamese" in redo.request


def test_a_debate_reply_in_english_twice_is_kept_and_flagged(vi_session):
    FakeProvider.script("fake", NO_LOOKUPS, A_EN, A_EN, CONTINUE, B_VI, STOP)
    debate.run_debate(vi_session.pk)
    first = agent_turns(vi_session)[0]
    assert first.content.startswith(A_EN)
    assert first.content.endswith(
        "_Flagged: this reply is not in Vietnamese, the language of the task (asked once more "
        "to write in Vietnamese, it did not)._"
    )
    assert first.data["flags"] == ["language"]


def test_planning_mode_handles_a_reply_in_english_the_same_way(vi_session):
    PlanningSession.objects.filter(pk=vi_session.pk).update(mode="planning")
    session = PlanningSession.objects.get(pk=vi_session.pk)
    ctx = nodes.NodeContext.load(session, PlanningState.objects.get(session=session))
    FakeProvider.script("fake", A_EN, A_VI)
    nodes.analyze_codebase(ctx)
    analysis = session.messages.get(node="analyze_codebase")
    assert analysis.content == A_VI
    assert analysis.data["discarded"][0]["reason"] == "it was not in the language of the task"


def test_a_claim_that_a_defined_class_does_not_exist_is_flagged_and_not_summarised_as_fact(
    vi_session,
):
    summary_repeating = f"## Đề xuất\n- {ABSENT_VI}\n- Thêm kiểm thử cho việc hết hạn."
    FakeProvider.script("fake", NO_LOOKUPS, ABSENT_VI, CONTINUE, B_VI, STOP, summary_repeating)
    debate.run_debate(vi_session.pk)
    claim = agent_turns(vi_session)[0]
    assert ABSENT_VI in claim.content
    flag = "_Flagged: the reply says `TokenStore` is not in the code, but the codebase defines "
    assert flag + "it at `todo/auth.py:" in claim.content
    assert [f["name"] for f in claim.data["false_absences"]] == ["TokenStore"]
    # B's reply claims nothing is missing: no flag.
    assert "false_absences" not in agent_turns(vi_session)[1].data

    written = summary.write_summary(PlanningSession.objects.get(pk=vi_session.pk))
    asked = FakeProvider.calls("fake", text=True)[-1].request
    assert "Checked against the code:\n- `TokenStore` is defined at `todo/auth.py:" in asked
    assert "Do not repeat a claim the check above contradicts as fact." in asked
    line = next(ln for ln in written.content.splitlines() if "không tồn tại" in ln)
    assert "_(not so: the codebase defines `TokenStore` at `todo/auth.py:" in line
    assert "1 claim(s) that a name is missing from the code, which the code defines." in (
        written.content
    )


def test_a_claim_that_a_missing_name_is_missing_stands(vi_session):
    # `Tokenstore` is not `TokenStore`: find_symbol finds it only by ignoring case.
    missing = ABSENT_VI.replace("TokenStore", "Tokenstore")
    FakeProvider.script("fake", NO_LOOKUPS, missing, CONTINUE, B_VI, STOP)
    debate.run_debate(vi_session.pk)
    claim = agent_turns(vi_session)[0]
    assert claim.content == missing
    assert "false_absences" not in claim.data
