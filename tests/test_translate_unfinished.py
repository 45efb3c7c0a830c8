"""A translation that never reached [EOS] says so (a bad-input walk: 我 alone came out as "i i i … i", 63 times,
on view 7 with no word that greedy decoding had run into its length limit rather than finished)."""

from __future__ import annotations

import functools

import pytest

from lab.compute import load_model
from lab.spec import FigureSpec
from lab.views import Models, build_view
from tests.conftest import needs_trained


@pytest.fixture(scope="module")
def models():
    return Models(functools.lru_cache(maxsize=None)(load_model))


@needs_trained
def test_a_translation_cut_off_at_the_length_limit_says_so_and_a_finished_one_does_not(models):
    spec = FigureSpec(model="zh-en", sentence_a="我", sentence_b="你喜欢她", views=("translate",))
    run = models.run(spec)
    looping, fine = run.sentences
    assert not looping.finished and len(looping.translation.split()) == len(looping.tgt_ids)  # the walk's: i i i …
    assert fine.finished
    said = [n for n in build_view("translate", spec, models).notices if "[EOS]" in n]
    assert len(said) == 1 and said[0].startswith("Sentence A: the decoder never wrote [EOS]")
    assert f"its limit of {len(looping.tgt_ids)} tokens" in said[0] and "cut off, not finished" in said[0]
    other = FigureSpec(model="zh-en", sentence_a="我", sentence_b="你喜欢她", sentence="b", views=("translate",))
    assert not [n for n in build_view("translate", other, models).notices if "[EOS]" in n]  # B's own: finished
