"""The demo corpus: deterministic, grammatical, and split so the held-out set is compositional.

The checks below do not reuse the generator's tables: they re-parse the Chinese with their own
regular expression and their own pronoun table, and check English morphology by rule.
"""

import hashlib
import os
import re
import subprocess
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from model.data import SEED_EXAMPLES, Pair, generate_corpus, split_corpus

REPO = Path(__file__).resolve().parents[1]

# Independent of model/data.py: the pronouns' case forms in English.
SUBJECT_FORM = {
    "我": "i", "你": "you", "他": "he", "她": "she",
    "我们": "we", "你们": "you", "他们": "they", "她们": "they",
}  # fmt: skip
OBJECT_FORM = {
    "我": "me", "你": "you", "他": "him", "她": "her",
    "我们": "us", "你们": "you", "他们": "them", "她们": "them",
}  # fmt: skip
THIRD_SINGULAR_PRONOUNS = {"他", "她"}
OBJECT_ONLY = {"me", "him", "us", "them"}  # never the first word of a sentence

# subject, optional time/negation, verb, optional 了 / 一+classifier, object.
_PARSE = re.compile(
    r"^(?P<s>.+?)"
    r"(?P<mod>不|每天|昨天没有|昨天)?"
    r"(?P<v>喜欢|爱|认识|讨厌|相信|看见|帮助|保护|教|有|没有)"
    r"(?P<le>了)?(?:一[只个本辆])?"
    r"(?P<o>.+)$"
)


def parse(zh: str) -> tuple[str, str, str, str]:
    """(subject, verb, object, modifier) by our own regular expression; 没有 N counts as 有."""
    m = _PARSE.match(zh)
    assert m, zh
    verb = "有" if m["v"] == "没有" else m["v"]
    return m["s"], verb, m["o"], (m["mod"] or "") + (m["le"] or "")


def digest(pairs: list[Pair]) -> str:
    text = "\n".join(f"{p.zh}\t{p.en}\t{'|'.join(p.triple)}\t{p.template}" for p in pairs)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def english_subject_length(subject_zh: str) -> int:
    """A pronoun is one English word; every other subject is two (the cat, my friend)."""
    return 1 if subject_zh in SUBJECT_FORM else 2


def without_time(en: str) -> list[str]:
    words = en.split(" ")
    if words[-1] == "yesterday":
        return words[:-1]
    if words[-2:] == ["every", "day"]:
        return words[:-2]
    return words


@pytest.fixture(scope="module")
def corpus() -> list[Pair]:
    return generate_corpus(seed=0)


@pytest.fixture(scope="module")
def split(corpus):
    return split_corpus(corpus, seed=0, heldout_fraction=0.1)


# --- Determinism ----------------------------------------------------------------------------
def test_same_seed_gives_the_same_corpus(corpus):
    again = generate_corpus(seed=0)
    assert [(p.zh, p.en) for p in again] == [(p.zh, p.en) for p in corpus]
    assert digest(again) == digest(corpus)


def test_different_seed_gives_a_different_sample(corpus):
    assert {p.zh for p in generate_corpus(seed=1)} != {p.zh for p in corpus}


@pytest.mark.parametrize("hash_seed", ["0", "12345"])
def test_corpus_and_split_do_not_depend_on_the_hash_seed(corpus, split, hash_seed):
    code = (
        # Load model/data.py by path: model/__init__ imports torch, which is slow to start.
        "import hashlib, importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('data', 'model/data.py')\n"
        "data = importlib.util.module_from_spec(spec)\n"
        "sys.modules['data'] = data\n"
        "spec.loader.exec_module(data)\n"
        "generate_corpus, split_corpus = data.generate_corpus, data.split_corpus\n"
        "def digest(ps):\n"
        "    t = '\\n'.join(f\"{p.zh}\\t{p.en}\\t{'|'.join(p.triple)}\\t{p.template}\" for p in ps)\n"
        "    return hashlib.sha256(t.encode('utf-8')).hexdigest()\n"
        "ps = generate_corpus(0)\n"
        "tr, ho = split_corpus(ps, seed=0, heldout_fraction=0.1)\n"
        "print(digest(ps), digest(tr), digest(ho))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [digest(corpus), digest(split[0]), digest(split[1])]


def test_split_is_deterministic(corpus, split):
    train, heldout = split_corpus(corpus, seed=0, heldout_fraction=0.1)
    assert digest(train) == digest(split[0]) and digest(heldout) == digest(split[1])


# --- Seed examples --------------------------------------------------------------------------
def test_seed_examples_are_in_train_with_the_expected_english(split):
    train, heldout = split
    expected = {
        "你喜欢她": "you like her",
        "她喜欢你": "she likes you",
        "我有一只猫": "i have a cat",
    }
    assert {p.zh: p.en for p in SEED_EXAMPLES} == expected
    train_map = {p.zh: p.en for p in train}
    for zh, en in expected.items():
        assert train_map[zh] == en
    assert not {p.zh for p in heldout} & set(expected)


def test_the_same_characters_in_another_order_translate_differently(corpus):
    """The whole point: 你喜欢她 and 她喜欢你 are permutations with different translations."""
    en = {p.zh: p.en for p in corpus}
    assert sorted("你喜欢她") == sorted("她喜欢你")
    assert en["你喜欢她"] != en["她喜欢你"]


# --- Format, size, uniqueness ---------------------------------------------------------------
def test_format_lowercase_single_spaces_no_punctuation_and_no_spaces_in_chinese(corpus):
    for p in corpus:
        assert re.fullmatch(r"[a-z]+( [a-z]+)*", p.en), p.en
        assert re.fullmatch(r"[\u4e00-\u9fff]+", p.zh), p.zh
        assert "".join(p.zh_words) == p.zh


def test_lengths_are_bounded(corpus):
    assert max(len(p.zh) for p in corpus) <= 12
    assert max(len(p.en.split(" ")) for p in corpus) <= 8
    assert 2000 <= len(corpus) <= 8000  # a few thousand: a tiny model trains in minutes


def test_no_duplicates_and_one_translation_per_sentence(corpus):
    assert len({p.zh for p in corpus}) == len(corpus)
    assert len(set(corpus)) == len(corpus)


# --- Grammar --------------------------------------------------------------------------------
def test_recorded_triples_match_an_independent_parse(corpus):
    for p in corpus:
        s, v, o, _ = parse(p.zh)
        assert p.triple == (s, v, o), p.zh


def test_pronoun_case_subject_and_object(corpus):
    """她 → she as subject and her as object (and likewise 我 → i / me, 他们 → they / them)."""
    checked_subjects = checked_objects = 0
    for p in corpus:
        s, _, o, _ = parse(p.zh)
        words = without_time(p.en)
        if s in SUBJECT_FORM:
            assert words[0] == SUBJECT_FORM[s], (p.zh, p.en)
            checked_subjects += 1
        if o in OBJECT_FORM:
            assert words[-1] == OBJECT_FORM[o], (p.zh, p.en)
            checked_objects += 1
        assert words[0] not in OBJECT_ONLY, p.en
        assert "i" not in words[1:] and "she" not in words[1:] and "he" not in words[1:], p.en
    assert checked_subjects > 1000 and checked_objects > 500


def test_possessive_her_is_not_the_subject_she(corpus):
    for p in corpus:
        if p.zh.startswith("她的"):
            assert p.en.startswith("her "), p.en
        elif p.zh.startswith("她") and not p.zh.startswith("她们"):
            assert p.en.startswith("she "), p.en


def test_agreement_third_person_singular_takes_s_in_the_present(corpus):
    """she likes / he does not / the cat has, but i like / they do not / we have."""
    n_third = n_other = 0
    for p in corpus:
        s, _, _, mod = parse(p.zh)
        if "昨天" in mod:
            continue  # past tense does not agree
        verb = p.en.split(" ")[english_subject_length(s)]
        third_singular = s in THIRD_SINGULAR_PRONOUNS or s not in SUBJECT_FORM
        if third_singular:
            assert verb.endswith("s"), (p.zh, p.en)
            n_third += 1
        else:
            assert not verb.endswith("s"), (p.zh, p.en)
            n_other += 1
        if mod == "不" or "没有" in p.zh:
            assert (
                verb in ("does", "do") and p.en.split(" ")[english_subject_length(s) + 1] == "not"
            )
    assert n_third > 500 and n_other > 500


def test_past_tense_does_not_depend_on_the_subject(corpus):
    forms = defaultdict(set)
    for p in corpus:
        s, v, _, mod = parse(p.zh)
        if "昨天" in mod:
            words = p.en.split(" ")
            forms[v, "没有" in mod].add(words[english_subject_length(s)])
            assert words[-1] == "yesterday", p.en
    assert forms and all(len(f) == 1 for f in forms.values()), dict(forms)
    assert all(f == {"did"} for (v, neg), f in forms.items() if neg)


def test_time_words_and_negation_are_translated(corpus):
    for p in corpus:
        assert ("每天" in p.zh) == p.en.endswith(" every day"), p.en
        assert ("昨天" in p.zh) == p.en.endswith(" yesterday"), p.en
        assert ("不" in p.zh or "没有" in p.zh) == (" not " in p.en), p.en


def test_indefinite_article_a_or_an_by_the_next_word(corpus):
    seen = set()
    for p in corpus:
        words = p.en.split(" ")
        for article, following in pairwise(words):
            if article in ("a", "an"):
                assert (article == "an") == (following[0] in "aeiou"), p.en
                seen.add(article)
    assert seen == {"a", "an"}


# --- Held-out split -------------------------------------------------------------------------
def test_heldout_is_about_the_requested_fraction_and_covers_every_template(corpus, split):
    train, heldout = split
    assert len(train) + len(heldout) == len(corpus)
    assert set(train).isdisjoint(heldout)
    assert 0.08 <= len(heldout) / len(corpus) <= 0.12
    assert {p.template for p in heldout} == {p.template for p in corpus}


def test_heldout_triples_never_occur_in_train(split):
    train, heldout = split
    train_triples = {parse(p.zh)[:3] for p in train}
    heldout_triples = {parse(p.zh)[:3] for p in heldout}
    assert heldout_triples and not heldout_triples & train_triples


def test_every_heldout_word_occurs_in_train_in_the_same_role(split):
    train, heldout = split
    train_chars = {c for p in train for c in p.zh}
    train_en = {w for p in train for w in p.en.split(" ")}
    train_zh_words = {w for p in train for w in p.zh_words}
    subjects = {parse(p.zh)[0] for p in train}
    verbs = {parse(p.zh)[1] for p in train}
    objects = {parse(p.zh)[2] for p in train}
    for p in heldout:
        s, v, o, _ = parse(p.zh)
        assert s in subjects and v in verbs and o in objects, p.zh
        assert set(p.zh) <= train_chars, p.zh
        assert set(p.zh_words) <= train_zh_words, p.zh
        assert set(p.en.split(" ")) <= train_en, p.en


def test_split_needs_triples():
    with pytest.raises(ValueError):
        split_corpus([Pair("你喜欢她", "you like her")])
