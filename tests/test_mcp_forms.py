"""Elicitation forms a question cannot fully ask: an optional field it cannot ask (a multi-select
list) is left out with a warning; a required one, or a form with nothing left to ask, is
declined with a warning."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from anvia_notebook.mcp._elicit import FormNotShown, elicit_result, form_questions

MULTI = {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "tags": MULTI},
    "required": ["name"],
}


def _params(schema):
    return SimpleNamespace(mode="form", message="Tell me", requested_schema=schema)


def _answered(*answers):
    return SimpleNamespace(
        status="answered",
        answers=[SimpleNamespace(question_id=q, choice=None, answer=a) for q, a in answers],
    )


def test_an_optional_field_no_question_can_ask_is_left_out():
    left_out: list[str] = []
    assert [q.id for q in form_questions("Tell me", FORM, left_out)] == ["name"]
    assert left_out == ["tags"]
    with pytest.raises(FormNotShown, match="'tags' is of a kind a question cannot ask"):
        form_questions("Tell me", FORM)  # without a list to note it in: refused as before


async def test_the_rest_of_the_form_is_asked_and_answered_with_a_warning():
    asked = []

    async def ask(questions):
        asked.append([q.id for q in questions])
        return _answered(("name", "Ada"))

    with pytest.warns(UserWarning, match=r"optional fields a question cannot ask \(tags\)"):
        result = await elicit_result(ask, _params(FORM), "forms")
    assert asked == [["name"]]
    assert (result.action, result.content) == ("accept", {"name": "Ada"})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"tags": MULTI}, "required": ["tags"]},  # required
        {"type": "object", "properties": {"tags": MULTI}},  # nothing else to ask
        # a required field that allows no value: no answer could ever be taken
        {
            "type": "object",
            "properties": {"size": {"type": "string", "enum": []}},
            "required": ["size"],
        },
        {"type": "object", "properties": {"size": {"enum": []}}, "required": ["size"]},
        # values written alike: two choices "1", one pick ticked both
        {"type": "object", "properties": {"x": {"enum": [1, "1"]}}, "required": ["x"]},
    ],
)
async def test_a_form_that_cannot_be_asked_is_declined_with_a_warning(schema):
    async def ask(questions):  # pragma: no cover - never asked
        raise AssertionError("asked")

    with pytest.warns(UserWarning, match="cannot be shown as questions"):
        result = await elicit_result(ask, _params(schema), "forms")
    assert result.action == "decline"


@pytest.mark.parametrize(
    ("spec", "alike"),
    [
        ({"enum": [1, "1"]}, '1 and "1"'),
        (
            {"enum": ["a", True, "true"], "enumNames": ["A", "Yes", "The text true"]},
            'true and "true"',
        ),
        (
            {"oneOf": [{"const": 2, "title": "Two"}, {"const": "2", "title": "Two, as text"}]},
            '2 and "2"',
        ),
        ({"enum": [1, 1, "1"]}, '1 and "1"'),
    ],
)
def test_a_field_whose_values_are_written_alike_is_not_shown_as_choices(spec, alike):
    """Its values became two choices of the same value: picking one ticked both, and the
    answer could not tell the server which value the person meant."""
    form = {"properties": {"x": spec}, "required": ["x"]}
    with pytest.raises(FormNotShown, match=f"field 'x' has values written alike \\({alike}\\)"):
        form_questions("Pick", form)
    left_out: list[str] = []  # optional: left out, as any field a question cannot ask
    optional = {"properties": {"x": spec, "name": {"type": "string"}}}
    assert [q.id for q in form_questions("Pick", optional, left_out)] == ["name"]
    assert left_out == ["x"]


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "string", "enum": ["a", "b", "a"], "enumNames": ["A", "B", "A again"]},
        {"oneOf": [{"const": "a", "title": "A"}, {"const": "b"}, {"const": "a", "title": "A!"}]},
    ],
)
def test_a_value_the_server_repeats_as_it_is_is_one_choice(spec):
    """``["a", "b", "a"]``: JSON Schema asks for unique values but does not require them, and
    both are the same answer, so the field is asked with the value once (first label), not left
    out of the form (or the whole form declined) as values written alike are."""
    [question] = form_questions("Pick", {"properties": {"x": spec}, "required": ["x"]})
    assert [(c.label, c.value) for c in question.choices] == [
        ("A", "a"),
        ("B" if "enumNames" in spec else "b", "b"),
    ]
    assert question.answer_schema == {"enum": ["a", "b"]}


@pytest.mark.parametrize(
    "spec",
    [
        {"enum": ["a", "b"], "enumNames": ["", "B"]},
        {"oneOf": [{"const": "a", "title": "  "}, {"const": "b", "title": "B"}]},
        {"enum": ["a", "b"], "enumNames": [None, "B"]},
    ],
)
def test_a_choice_whose_label_is_blank_is_shown_by_its_value(spec):
    """A blank name or title (``enumNames: ["", "B"]``) failed the whole form: the person was
    never asked, and the warning said the human input had failed."""
    [question] = form_questions("Pick", {"properties": {"x": spec}, "required": ["x"]})
    assert [(c.label, c.value) for c in question.choices] == [("a", "a"), ("B", "b")]


def test_a_blank_value_of_an_enum_is_said_to_be_one_no_choice_can_give():
    form = {"properties": {"x": {"enum": ["", "a"]}}, "required": ["x"]}
    with pytest.raises(FormNotShown, match="field 'x' has a blank value"):
        form_questions("Pick", form)


def _picked(*answers):
    return SimpleNamespace(
        status="answered",
        answers=[SimpleNamespace(question_id=q, choice=c, answer=a) for q, a, c in answers],
    )


async def test_answers_go_to_the_server_with_their_exact_json_type():
    """A whole number past 2**53 was rounded (through a float); a picked number of an integer
    enum, or of an enum without a type, went as a text."""
    form = {
        "type": "object",
        "properties": {
            "account": {"type": "integer"},
            "seats": {"type": "integer", "enum": [1, 2, 3]},
            "level": {"enum": [1, 2, "max"]},
            "price": {"type": "number"},
        },
        "required": ["account", "seats", "level", "price"],
    }

    async def ask(questions):
        return _picked(
            ("account", "12345678901234567891", None),
            ("seats", "2", "2"),
            ("level", "2", "2"),
            ("price", "9.5", None),
        )

    result = await elicit_result(ask, _params(form), "forms")
    assert result.content == {
        "account": 12345678901234567891,
        "seats": 2,
        "level": 2,
        "price": 9.5,
    }


@pytest.mark.parametrize(
    "spec", [{"type": "boolean", "enum": [True, False]}, {"enum": [True, False]}]
)
async def test_a_boolean_enum_sends_the_value_picked(spec):
    """A boolean field written with its values (``"enum": [true, false]``): its choices were
    ``True`` and ``False`` (Python's words), and a typed field's answer was read as ``"true"``,
    so picking True sent false."""
    form = {"type": "object", "properties": {"ok": spec}, "required": ["ok"]}
    [question] = form_questions("Sure?", form)
    assert [c.value for c in question.choices] == ["true", "false"]
    for picked, sent in (("true", True), ("false", False)):

        async def ask(questions, picked=picked):
            return _picked(("ok", picked, picked))

        result = await elicit_result(ask, _params(form), "forms")
        assert result.content == {"ok": sent}


async def test_a_human_input_that_fails_tells_the_server_cancel_not_its_error():
    """The failure's message went to the server as a JSON-RPC error (the app's own words), and
    nothing in the notebook said so."""

    async def ask(questions):
        raise RuntimeError("my UI crashed at /home/me/secret.txt")

    with pytest.warns(
        UserWarning, match="RuntimeError: my UI crashed .*the server was told cancel"
    ):
        result = await elicit_result(
            ask, _params({**FORM, "properties": {"name": {"type": "string"}}}), "forms"
        )
    assert result.action == "cancel"
    assert "secret" not in str(result.model_dump())


@pytest.mark.parametrize(
    ("field_format", "wrong", "right"),
    [
        ("email", "ada at example", "Ada Lovelace <ada@example.org>"),
        ("uri", "example.org/report", "https://example.org/report"),
        ("date", "next Tuesday", "2026-12-08"),
    ],
)
def test_a_form_field_s_format_is_checked_before_the_answer_is_sent(field_format, wrong, right):
    """An e-mail or URI field took any text (only dates were checked): the server got it."""
    from anvia_notebook.question_types import check_operator_answers

    form = {"type": "object", "properties": {"f": {"type": "string", "format": field_format}}}
    questions = form_questions("Tell me", form)
    refused = check_operator_answers(questions, [{"questionId": "f", "answer": wrong}])
    assert refused == (
        f"The answer to question 'f' does not fit: {wrong!r} is not a {field_format!r}."
    )
    (answer,) = check_operator_answers(questions, [{"questionId": "f", "answer": right}])
    assert answer.answer == right


async def test_a_fields_default_is_offered_and_sent_when_chosen():
    """A field's ``default`` was never shown (only "Leave blank"), nor sent: the MCP spec asks
    clients to pre-fill it."""
    form = {
        "type": "object",
        "properties": {
            "retries": {"type": "integer", "default": 3, "description": "How many retries"},
            "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
            "note": {"type": "string"},
        },
    }
    questions = {q.id: q for q in form_questions("Tell me", form)}
    assert [c.label for c in questions["retries"].choices] == ["Use the default (3)"]
    assert [c.label for c in questions["mode"].choices][-1] == "Use the default (safe)"
    assert [c.label for c in questions["note"].choices] == ["Leave blank"]

    async def ask(asked):
        return _picked(
            ("retries", "(blank)", "(blank)"),
            ("mode", "(blank)", "(blank)"),
            ("note", "(blank)", "(blank)"),
        )

    result = await elicit_result(ask, _params(form), "forms")
    assert result.content == {"retries": 3, "mode": "safe"}


async def test_a_servers_own_value_named_like_blank_is_that_value():
    """A server's enum value ``(blank)`` was taken for "leave blank": a required field went
    missing from the answer, and an optional one listed "(blank)" twice."""
    form = {
        "type": "object",
        "properties": {
            "value": {"type": "string", "enum": ["(blank)", "x"]},
            "other": {"type": "string", "enum": ["(blank)", "y"]},
        },
        "required": ["value"],
    }
    questions = {q.id: q for q in form_questions("Tell me", form)}
    assert [c.value for c in questions["other"].choices] == ["(blank)", "y"]

    async def ask(asked):
        return _picked(("value", "(blank)", "(blank)"), ("other", "(blank)", "(blank)"))

    result = await elicit_result(ask, _params(form), "forms")
    assert result.content == {"value": "(blank)", "other": "(blank)"}
