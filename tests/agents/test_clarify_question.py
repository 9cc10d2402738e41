"""Which of the model's clarifying questions reach the human: only real ones."""

from agents.investigation.clarify import usable_question

PROMPT = "clarify only when the task can mean two different changes and the code cannot tell which"


def test_a_real_question_is_asked_on_one_line():
    asked = usable_question("Should expired tokens be\n deleted, or refused?", PROMPT)
    assert asked == "Should expired tokens be deleted, or refused?"


def test_a_question_holding_a_placeholder_is_not_asked():
    assert usable_question("Which function at path:line should change?", PROMPT) == ""


def test_a_statement_is_not_asked():
    assert usable_question("The tokens are stored in memory.", PROMPT) == ""


def test_a_question_copied_from_the_prompt_is_not_asked():
    assert usable_question("Does the task can mean two different changes?", PROMPT) == ""
