"""The figure spec: strict validation naming the field, lossless JSON and share-link round trips."""

import json
import re
import unicodedata

import pytest

from lab.spec import FigureSpec, SpecError


def test_defaults_are_the_mission_pair():
    s = FigureSpec()
    assert (s.sentence_a, s.sentence_b) == ("你喜欢她", "她喜欢你")


@pytest.mark.parametrize(
    "data, field",
    [
        ({"colour": "red"}, "colour"),
        ({"layer": "1"}, "layer"),
        ({"layer": True}, "layer"),
        ({"heads": [0, "1"]}, "heads"),
        ({"n_heads": 3}, "n_heads"),  # 64 is not divisible by 3
        ({"d_model": 63, "n_heads": 1}, "d_model"),  # odd d_model with sinusoidal PE
        ({"views": ["attention", "nope"]}, "views"),
        ({"theme": "neon"}, "theme"),
        ({"format": "gif"}, "format"),
        ({"width": 5}, "width"),
        ({"model": "zh-en", "positional": "learned"}, "positional"),
        ({"heads": [1, 1, 0]}, "heads"),  # a grid would draw head 1 twice
        ({"views": ["heads", "attention", "heads"]}, "views"),
    ],
)
def test_bad_specs_name_the_field(data, field):
    with pytest.raises(SpecError) as info:
        FigureSpec.from_dict(data)
    assert info.value.field == field
    assert str(info.value).startswith(field + ":")


@pytest.mark.parametrize(
    "data, said",
    [
        ({"views": []}, "views: name at least one view"),
        ({"scale": 12}, "scale: 12.0 is outside [0.1, 10]"),
        ({"scale": 0.05}, "scale: 0.05 is outside [0.1, 10]"),
        ({"scale": "3"}, 'scale: expected a number, got "3"'),
        ({"scale": True}, "scale: expected a number, got true"),
        ({"theme": 1}, "theme: expected a string, got 1"),
        ({"sentence_a": ["你好"]}, 'sentence_a: expected a string, got ["你好"]'),
        ({"heads": [0, -1]}, "heads: head -1 is negative"),
        ({"views": ["attention", 3]}, "views: expected a list of strings"),
        ({"views": {"attention": 1}}, "views: expected a list of strings"),
    ],
)
def test_bad_specs_say_what_is_wrong_in_the_fields_own_terms(data, said):
    """What python -m lab.export prints after 'bad spec: ' (a researcher's hand-written JSON)."""
    with pytest.raises(SpecError) as info:
        FigureSpec.from_dict(data)
    assert str(info.value) == said


def test_a_single_view_may_be_named_without_a_list():
    assert FigureSpec.from_dict({"views": "heads"}).views == ("heads",)


def test_json_round_trip_keeps_every_field():
    s = FigureSpec(sentence_a="<b>x</b> 😀", views=("attention", "order"), heads=(1, 3), scale=3.125,
                   layer=1, mask="look-ahead", block="cross")
    back = FigureSpec.from_json(s.to_json())
    assert back == s
    assert json.loads(s.to_json())["views"] == ["attention", "order"]


def test_json_shows_control_and_format_characters_as_escapes_and_reads_them_back():
    """A right-to-left override (U+202E) shown raw in the app's spec box turns the rest of its line around, a
    control draws as a box: to_json writes them as \\uXXXX (a surrogate pair above U+FFFF), Chinese, emoji and
    spaces as themselves, and the JSON reads back to the same spec."""
    s = FigureSpec(sentence_a="\u202e你喜欢她 \x00\x1b[31m\x7f", sentence_b="a\u200db 😀 🏴\U000e0067\U000e007f")
    text = s.to_json()
    assert FigureSpec.from_json(text) == s
    assert not any(unicodedata.category(ch)[0] == "C" for ch in text if ch != "\n")
    assert '"\\u202e你喜欢她 \\u0000\\u001b[31m\\u007f"' in text
    assert '"a\\u200db 😀 🏴\\udb40\\udc67\\udb40\\udc7f"' in text


def test_share_link_round_trip_carries_only_changes():
    s = FigureSpec(sentence_b="我有一只猫", head=2, views=("heads",), heads=(0, 2))
    q = s.to_query()
    assert set(q) == {"sentence_b", "head", "views", "heads"}
    assert all(isinstance(v, str) for v in q.values())
    assert FigureSpec.from_query(q) == s
    assert FigureSpec.from_query({}) == FigureSpec()
    with pytest.raises(SpecError, match="layer"):
        FigureSpec.from_query({"layer": "two"})
    with pytest.raises(SpecError, match="evil"):
        FigureSpec.from_query({"evil": "1"})


def test_invalid_json_is_a_spec_error():
    with pytest.raises(SpecError, match="not valid JSON"):
        FigureSpec.from_json("{")
    with pytest.raises(SpecError, match="JSON object"):
        FigureSpec.from_json("[1, 2]")


def test_a_link_parameter_without_a_name_is_named_as_such():
    with pytest.raises(SpecError) as info:
        FigureSpec.from_query({"": "x"})
    assert str(info.value) == '"": unknown field in the link'
    with pytest.raises(SpecError, match="'1' is named twice|1 is named twice"):
        FigureSpec.from_query({"heads": "1,1,0,1"})


@pytest.mark.parametrize("field, raw", [("layer", "1_0"), ("layer", "１"), ("seed", "1_000"), ("layer", " 1"),
                                        ("scale", "1e-400"), ("scale", "inf"), ("scale", "nan"), ("heads", "0,1_0")])
def test_a_link_number_is_read_as_written_or_named_as_not_one(field, raw):
    """A bad-input walk: Python's int() read layer=1_0 as 10 (and the notice named layer 10), full-width １ as 1,
    and float() read scale=1e-400 as 0.0 ("0.0 is outside [0.1, 10]"): a link's number is ASCII digits as
    written, finite, and not rounded to 0; otherwise the notice quotes what the link holds."""
    with pytest.raises(SpecError) as info:
        FigureSpec.from_query({field: raw})
    kind = {"scale": "a number (such as 3.125)", "heads": "a list of whole numbers separated by commas (such as 0,2)"}
    assert str(info.value) == f"{field}: {raw!r} is not {kind.get(field, 'a whole number (such as 2)')}"
    assert "int" not in str(info.value).split(": ", 1)[1].replace(raw, "")  # words, not Python's "int" or "tuple"


def test_a_link_number_as_the_app_writes_it_reads_back():
    for spec in (FigureSpec(layer=3, seed=123456, scale=3.125, heads=(0, 2)), FigureSpec(scale=0.1, head=1),
                 FigureSpec(scale=10.0, width=1200)):
        assert FigureSpec.from_query(spec.to_query()) == spec
    assert FigureSpec.from_query({"scale": ".5", "layer": "+2"}) == FigureSpec(scale=0.5, layer=2)
    assert FigureSpec.from_query({"scale": "2E0"}) == FigureSpec(scale=2.0)


@pytest.mark.parametrize("d_model, n_heads", [(1023, 3), (1023, 31), (1001, 13), (1023, 1)])
def test_an_odd_d_model_near_the_top_is_offered_only_even_ones_a_spec_takes(d_model, n_heads):
    """A re-read of lab/spec.py: d_model 1023 in 3 heads was told "choose 1020 or 1026", and 1026 is past d_model's
    1024, so the second choice it offered was refused in turn. What it offers is in range, and there is one."""
    with pytest.raises(SpecError) as err:
        FigureSpec(d_model=d_model, n_heads=n_heads)
    offered = [int(m) for m in re.findall(r"choose ([0-9]+)(?: or ([0-9]+))?", str(err.value))[0] if m]
    assert offered and all(2 <= m <= 1024 for m in offered), str(err.value)
    for m in offered:
        FigureSpec(d_model=m, n_heads=n_heads)  # draws: even, in range, and splits into the heads


@pytest.mark.parametrize("d_model, n_heads", [(3, 1), (15, 3), (7, 7), (9, 1), (21, 7)])
def test_an_odd_d_model_under_sinusoidal_pe_names_even_ones_that_work_and_the_other_encodings(d_model, n_heads):
    """A bad-input walk: "needs an even d_model" said what was wrong, not what to do. Every d_model it offers draws
    with the same heads, and the encodings that take an odd d_model draw it as it is."""
    with pytest.raises(SpecError) as err:
        FigureSpec(d_model=d_model, n_heads=n_heads)
    said = str(err.value)
    offered = [int(m) for m in re.findall(r"choose ([0-9]+)(?: or ([0-9]+))?", said)[0] if m]
    assert offered and all(m % 2 == 0 for m in offered), said
    for m in offered:
        FigureSpec(d_model=m, n_heads=n_heads)  # draws: even, and splits into the heads
    assert "'learned' or 'none'" in said
    for positional in ("learned", "none"):
        FigureSpec(d_model=d_model, n_heads=n_heads, positional=positional)


@pytest.mark.parametrize("d_model, n_heads, said", [(97, 3, "only 1 head does"), (67, 2, "only 1 head does"),
                                                    (13, 2, "1 or 13 heads do"), (30, 4, "15 or 30 heads do")])
def test_the_heads_a_d_model_splits_into_are_counted_in_words(d_model, n_heads, said):
    """A words walk: a prime d_model above the heads box's 64 (97, in the sidebar's range) splits only into 1 head,
    and the advice read "1 heads do"; one head is said in the singular, two or more as before."""
    from ui.state import UI_LIMITS

    with pytest.raises(SpecError) as err:
        FigureSpec(d_model=d_model, n_heads=n_heads, offer=UI_LIMITS)
    assert said in str(err.value) and "1 heads" not in str(err.value), str(err.value)
