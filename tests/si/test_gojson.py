"""User-written JSON read as Go's encoding/json decodes it, within a size and a depth."""

import pytest

from si import gojson


def test_depth_and_size_are_bounded_before_parsing():
    for text in ("[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000):
        with pytest.raises(gojson.JSONError, match="nests deeper than 64"):
            gojson.loads(text, "x")
    assert gojson.loads("[" * 64 + "]" * 64, "x") is not None
    with pytest.raises(gojson.JSONError, match="longer than"):
        gojson.loads(" " * (gojson.MAX_SIZE + 1), "x")


def test_brackets_inside_strings_do_not_count():
    assert gojson.loads('["' + "[" * 500 + '\\"]"]', "x") == ["[" * 500 + '"]']


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "[1,", "{'a': 1}", ""])
def test_what_go_refuses(text):
    with pytest.raises(gojson.JSONError):
        gojson.loads(text, "x")


def test_a_lone_surrogate_escape_becomes_the_replacement_character_as_in_go():
    assert gojson.loads('{"user": "a\\ud800b", "\\udfff": 1}', "x") == {"user": "a\ufffdb", "\ufffd": 1}
    assert gojson.loads('"\\ud83d\\ude00"', "x") == "\U0001f600"  # a pair stays one character


def test_struct_fields_match_exactly_else_case_insensitively_with_gos_folding():
    fields = ("name", "minMember", "skew")
    document = {"NAME": "a", "MinMember": 1, "\u017fKEW": 2, "unknown": 3}
    assert gojson.go_fields(document, fields, "x") == {"name": "a", "minMember": 1, "skew": 2}


def test_a_later_duplicate_wins_and_null_is_absent():
    assert gojson.go_fields({"Name": "a", "name": "b"}, ("name",), "x") == {"name": "b"}
    assert gojson.go_fields({"name": "a", "NAME": None}, ("name",), "x") == {}
    with pytest.raises(gojson.JSONError, match="must be a JSON object, not a list"):
        gojson.go_fields([], ("name",), "x")


def test_typed_values_refuse_the_wrong_json_type():
    assert gojson.go_string_map({"a": "b", "c": None}, "m") == {"a": "b", "c": ""}
    assert gojson.go_string_list(["a", None], "l") == ["a", ""]
    assert gojson.go_int(5, "n", 0, 10) == 5
    for value in (5.0, True, "5", 11):
        with pytest.raises(gojson.JSONError):
            gojson.go_int(value, "n", 0, 10)
    for value in ({"a": 1}, ["a"], "a"):
        with pytest.raises(gojson.JSONError, match="m must be a JSON object of strings"):
            gojson.go_string_map(value, "m")
