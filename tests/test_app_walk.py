"""A seeded random walk through the app (AppTest): many settings, nasty sentences, then a few actions
in the same session. Whatever a person does, the page never shows a traceback or an error box, and it
always shows something: figures, the token tables, or a hint (type a sentence; choose the trained model).

The walk is the same on every run (a fixed seed), so a failure names the settings that broke it.
"""

from __future__ import annotations

import random

import pytest
from conftest import APP, figures

from lab.spec import (
    BLOCKS,
    MASKS,
    MODELS,
    NORMS,
    POSITIONALS,
    THEMES,
    TOKENIZERS,
    VIEWS,
    FigureSpec,
    SpecError,
)

NASTY = ["", " \t\n", "a", "你", "你喜欢她", "I like her", "🐱👍🏽🇨🇳\u200d", "שלום مرحبا",
         "<script>alert(1)</script>", "\x00\x07\x1b[31m", "春" * 3000, "\u200b\u200d\ufeff", "x y z " * 80,
         "a\u0301\u0301\u0301", "[BOS] [EOS] [PAD] [UNK]", "<b>bold</b>&amp;", "ℌ𝔢𝔩𝔩𝔬", "\ud7ff\ue000"]
ACTIONS = ("view", "layer", "head", "query", "sentence", "swap")


def random_spec(rng: random.Random) -> FigureSpec | None:
    try:
        return FigureSpec(
            sentence_a=rng.choice(NASTY), sentence_b=rng.choice(NASTY), model=rng.choice(MODELS),
            tokenizer=rng.choice(TOKENIZERS), positional=rng.choice(POSITIONALS), mask=rng.choice(MASKS),
            block=rng.choice(BLOCKS), layer=rng.randint(0, 3), head=rng.randint(0, 5), query=rng.randint(0, 40),
            sentence=rng.choice("ab"), d_model=rng.choice([8, 12, 16, 30]), n_heads=rng.choice([1, 2, 3, 4]),
            n_layers=rng.choice([1, 2, 3]), d_ff=rng.choice([8, 32]), norm=rng.choice(NORMS),
            seed=rng.randint(0, 3), theme=rng.choice(THEMES), views=(rng.choice(VIEWS),))
    except SpecError:  # impossible sizes: refused with a message (tests/test_app.py checks that page)
        return None


def act(at, rng: random.Random) -> str:
    """One thing a person does; returns what it was."""
    action = rng.choice(ACTIONS)
    if action == "view":
        at.segmented_control(key="view").set_value(rng.choice(VIEWS)).run()
    elif action in ("layer", "head", "query"):
        boxes = [w for w in at.selectbox if w.key == action]
        if boxes:  # drawn by this view only
            boxes[0].set_value(rng.randrange(len(boxes[0].options))).run()
    elif action == "sentence":
        at.text_input(key=rng.choice(["sentence_a", "sentence_b"])).set_value(rng.choice(NASTY)).run()
    else:
        at.button(key="swap").click().run()
    return action


def assert_sound(at, what: str) -> None:
    assert not at.exception, (what, [e.value for e in at.exception])
    assert not at.error, (what, [e.value for e in at.error])
    shown = figures(at) or len(at.dataframe) or len(at.table) or len(at.info)  # st.table: slide; an info: "Type…"
    assert shown, (what, "the page shows no figure, no table and no hint")


@pytest.mark.parametrize("seed", range(3))
def test_a_random_walk_never_breaks_the_page(seed):
    from streamlit.testing.v1 import AppTest

    rng = random.Random(seed)
    walked = 0
    while walked < 12:
        spec = random_spec(rng)
        if spec is None:
            continue
        walked += 1
        at = AppTest.from_file(str(APP), default_timeout=120)
        query = spec.to_query()
        query["views"] = ",".join(spec.views)
        at.query_params.update(query)  # a share link: every setting at once
        at.run()
        assert at.session_state["sentence_a"] == spec.sentence_a  # the walk really typed the nasty text
        assert_sound(at, f"{spec.to_json()}")
        for _ in range(3):
            action = act(at, rng)
            assert_sound(at, f"{action} after {spec.to_json()}")
