"""A regenerated section that repeats another section, or holds nothing the instruction asks
for, is redone once with what was wrong shown to the model; if the redo is no better, the new
version says so instead of "Regenerated Risks: <instruction>"."""

import pytest

from agents.plan import build_version
from agents.plan_writer import asked_for, regenerate_section
from agents.providers.fake import FakeProvider
from conversations.models import Message, Plan, PlanningSession, PlanningState
from conversations.store import add_message

pytestmark = pytest.mark.django_db

NAT = "Add the risk of locking out users behind a shared NAT"
SUMMARY = "Count failed logins per client and refuse the sixth attempt for fifteen minutes."


@pytest.fixture
def plan(user, codebase):
    session = PlanningSession.objects.create(
        owner=user, codebase=codebase, title="Rate limiting", task="Add rate limiting",
        agent_a_profile="fake", agent_b_profile="fake", status="completed",
    )  # fmt: skip
    PlanningState.objects.create(session=session, current_node="completed")
    data = {
        "summary": SUMMARY,
        "decisions": ["Keep counters in memory."],
        "steps": [{"title": "Add the counter", "detail": "In the handler.", "files": []}],
        "files": [],
        "testing": ["A sixth failed login gets 429."],
        "risks": ["Counters reset on restart."],
        "effort": {"size": "S", "estimate": "1 day"},
    }
    markdown, structured = build_version(data, codebase, title=session.title)
    return Plan.objects.create(session=session, version=1, markdown=markdown, structured=structured)


def regenerate(plan, key, instruction, *replies):
    FakeProvider.script("fake", *({"items": items} for items in replies))
    request = add_message(
        plan.session_id, role=Message.Role.USER, content=f"Regenerate {key}: {instruction}",
        data={"regenerate": {"plan": plan.pk, "section": key, "instruction": instruction}},
    )  # fmt: skip
    return regenerate_section(request.pk)


def test_risks_that_repeat_the_summary_are_redone_with_that_shown_to_the_model(plan):
    v2 = regenerate(
        plan, "risks", NAT, [SUMMARY], ["Users behind one NAT share an IP and lock each other out."]
    )

    assert v2.note == f"Regenerated Risks: {NAT}"
    assert v2.structured["risks"] == ["Users behind one NAT share an IP and lock each other out."]
    first, redo = FakeProvider.calls("fake")
    assert redo.messages[:-2] == first.messages  # the same prompt, then the reply, then why
    assert SUMMARY in redo.messages[-2].content and redo.messages[-2].role == "assistant"
    assert "repeats Summary" in redo.request


def test_risks_that_still_repeat_the_summary_are_labelled_so(plan):
    v2 = regenerate(plan, "risks", NAT, [SUMMARY], [SUMMARY])

    assert v2.note == (
        f"Regenerated Risks, but the new text repeats Summary and does not address: {NAT}"
    )
    assert len(FakeProvider.calls("fake")) == 2  # redone once, not again
    said = plan.session.messages.filter(role=Message.Role.SYSTEM).last()
    assert "but the new text repeats Summary" in said.content


def test_risks_that_ignore_the_instruction_twice_say_it_was_not_addressed(plan):
    ignored = ["Counters live in one process only."]
    v2 = regenerate(plan, "risks", NAT, ignored, ignored)

    assert v2.note == f"Regenerated Risks, but the new text does not address: {NAT}"
    assert "does not address" in FakeProvider.calls("fake")[-1].request


def test_risks_that_address_the_instruction_are_kept_at_the_first_try(plan):
    v2 = regenerate(plan, "risks", NAT, ["Clients sharing a NAT gateway get locked out together."])

    assert v2.note == f"Regenerated Risks: {NAT}"
    assert len(FakeProvider.calls("fake")) == 1


VI = "thêm rủi ro khi nhiều người dùng chung một địa chỉ IP"


def test_a_vietnamese_instruction_is_checked_in_vietnamese(plan):
    v2 = regenerate(
        plan, "risks", VI,
        ["Bộ đếm bị mất khi khởi động lại máy chủ."],
        ["Nhiều người dùng chung một địa chỉ IP có thể bị khóa cùng lúc."],
    )  # fmt: skip

    assert len(FakeProvider.calls("fake")) == 2  # the first reply ignored it
    assert v2.note == f"Regenerated Risks: {VI}"


def test_a_vietnamese_instruction_is_found_in_an_english_reply(plan):
    # "người dùng" is "user" in rag.vietnamese's glossary; the reply names no IP.
    v2 = regenerate(plan, "risks", VI, ["Users on one office network get locked out together."])

    assert len(FakeProvider.calls("fake")) == 1
    assert v2.note == f"Regenerated Risks: {VI}"


@pytest.mark.parametrize(
    "instruction",
    [
        "split it",
        "make it shorter",
        "remove the restart risk",
        "bỏ rủi ro về khởi động lại",
        "bo rui ro ve khoi dong lai",  # typed without diacritics
    ],
)
def test_an_instruction_about_form_or_removal_is_not_judged_by_its_words(instruction):
    assert asked_for(instruction, "Risks") == set()


def test_words_are_compared_by_stem_and_without_diacritics():
    assert asked_for("mention locked accounts", "Risks") == {"lock", "account"}
    assert asked_for("nêu rủi ro về bộ nhớ đệm", "Risks") >= {"cach"}  # "bộ" is not "bỏ"
    typed_plain = "them rui ro khi nhieu nguoi dung chung mot dia chi IP"
    assert asked_for(typed_plain, "Risks") == asked_for(VI, "Risks")
