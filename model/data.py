"""A tiny, deterministic Chinese → English parallel corpus for demo translation Transformers.

Why this corpus: 你喜欢她 and 她喜欢你 use the same three characters, yet translate to
"you like her" and "she likes you". Getting them right needs word ORDER (who is the
subject) plus English morphology that depends on it: pronoun case (她 → she / her,
我 → i / me, 他们 → they / them) and agreement (she likes / they like). A model without
positional information cannot tell the two apart, which is the point the app makes.

Grammar (seven templates, all sentences subject-verb-object):

    svo        她喜欢你             she likes you
    neg        她不喜欢你           she does not like you
    habitual   她每天帮助你         she helps you every day        (time word moves to the end)
    past       她昨天帮助了你       she helped you yesterday
    past_neg   她昨天没有帮助你     she did not help you yesterday
    have       我有一只大白猫       i have a big white cat         (classifier 只/个/本/辆 → a / an)
    not_have   他们没有红苹果       they do not have a red apple

Noun phrases: pronouns (我 你 他 她 我们 你们 他们 她们), "the" + noun (老师 → the teacher),
and possessives (我的猫 → my cat). Only eventive verbs (看见 帮助 保护 教) take the time words.

Output conventions: Chinese has no spaces (the source is tokenised per character, so 我们 is two
tokens); English is lowercase words joined by single spaces with no final punctuation
("i", not "I"). No sentence exceeds MAX_ZH_CHARS characters or MAX_EN_WORDS words.

Determinism: everything is drawn from random.Random(seed) over tuples in a fixed order, never
from hash() or set iteration, so every process (any PYTHONHASHSEED) builds the same corpus.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import dataclass, field

MAX_ZH_CHARS = 12
MAX_EN_WORDS = 8


@dataclass(frozen=True)
class Pair:
    """One parallel sentence. Only (zh, en) take part in equality and hashing.

    triple: (subject phrase, verb, object phrase) in Chinese words, with negation, tense,
    numeral and classifier stripped (她不喜欢你 → ("她", "喜欢", "你"); 我有一只白猫 →
    ("我", "有", "白猫")). split_corpus holds out whole triples.
    template: which grammar template made the pair (see the module docstring).
    zh_words: the Chinese sentence segmented into words; "".join(zh_words) == zh.
    """

    zh: str
    en: str
    triple: tuple[str, str, str] = field(default=("", "", ""), compare=False)
    template: str = field(default="", compare=False)
    zh_words: tuple[str, ...] = field(default=(), compare=False)


# --- Lexicon ------------------------------------------------------------------------------
# Pronouns: zh → (subject form, object form, possessive determiner, third person singular?)
PRONOUNS: dict[str, tuple[str, str, str, bool]] = {
    "我": ("i", "me", "my", False),
    "你": ("you", "you", "your", False),
    "他": ("he", "him", "his", True),
    "她": ("she", "her", "her", True),
    "我们": ("we", "us", "our", False),
    "你们": ("you", "you", "your", False),
    "他们": ("they", "them", "their", False),
    "她们": ("they", "them", "their", False),
}
# Nouns that stand alone as "the ..." (all third person singular).
NOUNS: dict[str, str] = {
    "老师": "teacher",
    "学生": "student",
    "医生": "doctor",
    "孩子": "child",
    "猫": "cat",
    "狗": "dog",
}
# Nouns that follow a possessive 的: 我的朋友 → my friend.
POSSESSED: dict[str, str] = {"猫": "cat", "狗": "dog", "老师": "teacher", "朋友": "friend"}
# Possessors used with 的 (a subset keeps sentences short).
POSSESSORS: tuple[str, ...] = ("我", "你", "他", "她", "我们", "他们")
# People who may own things in the have / not_have templates (besides pronouns, my teacher, ...).
OWNERS: tuple[str, ...] = ("老师", "学生", "医生", "孩子")

# Transitive verbs: zh → (bare, third person singular, past).
VERBS: dict[str, tuple[str, str, str]] = {
    "喜欢": ("like", "likes", "liked"),
    "爱": ("love", "loves", "loved"),
    "认识": ("know", "knows", "knew"),
    "讨厌": ("hate", "hates", "hated"),
    "相信": ("trust", "trusts", "trusted"),
    "看见": ("see", "sees", "saw"),
    "帮助": ("help", "helps", "helped"),
    "保护": ("protect", "protects", "protected"),
    "教": ("teach", "teaches", "taught"),
}
# Verbs that describe events, so "every day" / "yesterday" reads naturally with them.
EVENTIVE_VERBS: tuple[str, ...] = ("看见", "帮助", "保护", "教")
# 看见 is resultative: Chinese negates it with 没(有), never 不, so it skips the neg template.
NEGATABLE_VERBS: tuple[str, ...] = tuple(v for v in VERBS if v != "看见")

# Things one can have: zh → (english, classifier used with 一, colours that suit it).
THINGS: dict[str, tuple[str, str, str]] = {
    "猫": ("cat", "只", "白黑"),
    "狗": ("dog", "只", "白黑"),
    "鸟": ("bird", "只", "白黑"),
    "兔子": ("rabbit", "只", "白黑"),
    "苹果": ("apple", "个", "红"),
    "书": ("book", "本", "白黑红"),
    "车": ("car", "辆", "白黑红"),
}
# Adjectives: size/age slot first, colour second, as in English ("a big white cat").
SIZE_ADJECTIVES: dict[str, str] = {"大": "big", "小": "small", "旧": "old"}
COLOUR_ADJECTIVES: dict[str, str] = {"白": "white", "黑": "black", "红": "red"}
AGE_NOUNS: tuple[str, ...] = ("书", "车")  # 旧 (old) only for objects, not animals or fruit

TEMPLATES: tuple[str, ...] = (
    "svo",
    "neg",
    "habitual",
    "past",
    "past_neg",
    "have",
    "not_have",
)
# How many distinct sentences each template contributes (about 4,800 pairs in total).
TEMPLATE_SIZES: dict[str, int] = {
    "svo": 1400,
    "neg": 800,
    "habitual": 400,
    "past": 500,
    "past_neg": 400,
    "have": 900,
    "not_have": 400,
}

SEED_EXAMPLES: tuple[Pair, ...] = (
    Pair("你喜欢她", "you like her", ("你", "喜欢", "她"), "svo", ("你", "喜欢", "她")),
    Pair("她喜欢你", "she likes you", ("她", "喜欢", "你"), "svo", ("她", "喜欢", "你")),
    Pair("我有一只猫", "i have a cat", ("我", "有", "猫"), "have", ("我", "有", "一", "只", "猫")),
)


# --- Noun phrases -------------------------------------------------------------------------
@dataclass(frozen=True)
class _NP:
    zh_words: tuple[str, ...]  # 我的猫 → ("我", "的", "猫")
    subject: str  # english as subject
    object: str  # english as object
    third_singular: bool

    @property
    def zh(self) -> str:
        return "".join(self.zh_words)


def _pronoun_np(zh: str) -> _NP:
    subj, obj, _, third = PRONOUNS[zh]
    return _NP((zh,), subj, obj, third)


def _noun_np(zh: str) -> _NP:
    en = "the " + NOUNS[zh]
    return _NP((zh,), en, en, True)


def _possessive_np(owner: str, noun: str) -> _NP:
    en = PRONOUNS[owner][2] + " " + POSSESSED[noun]
    return _NP((owner, "的", noun), en, en, True)


_PRONOUN_NPS = tuple(_pronoun_np(p) for p in PRONOUNS)
_NOUN_NPS = tuple(_noun_np(n) for n in NOUNS)
_POSSESSIVE_NPS = tuple(_possessive_np(o, n) for o in POSSESSORS for n in POSSESSED)
_OWNER_NPS = (
    _PRONOUN_NPS
    + tuple(_noun_np(n) for n in OWNERS)
    + tuple(_possessive_np(o, n) for o in POSSESSORS for n in ("老师", "朋友"))
)


def _draw_np(rng: random.Random) -> _NP:
    """Pronouns half the time, so that case and agreement dominate the corpus."""
    kind = rng.random()
    if kind < 0.5:
        return rng.choice(_PRONOUN_NPS)
    if kind < 0.75:
        return rng.choice(_NOUN_NPS)
    return rng.choice(_POSSESSIVE_NPS)


def _indefinite(words: list[str]) -> str:
    """a / an by the sound of the next word (every word here starts as it is spelled)."""
    return ("an " if words[0][0] in "aeiou" else "a ") + " ".join(words)


# --- Sentence builders --------------------------------------------------------------------
def _verb_sentence(template: str, s: _NP, verb: str, o: _NP) -> Pair:
    bare, third, past = VERBS[verb]
    present = third if s.third_singular else bare
    do = "does" if s.third_singular else "do"
    if template == "svo":
        middle, en = (verb,), f"{s.subject} {present} {o.object}"
    elif template == "neg":
        middle, en = ("不", verb), f"{s.subject} {do} not {bare} {o.object}"
    elif template == "habitual":
        middle, en = ("每天", verb), f"{s.subject} {present} {o.object} every day"
    elif template == "past":
        middle, en = ("昨天", verb, "了"), f"{s.subject} {past} {o.object} yesterday"
    elif template == "past_neg":
        middle, en = ("昨天", "没有", verb), f"{s.subject} did not {bare} {o.object} yesterday"
    else:
        raise ValueError(f"not a verb template: {template!r}")
    words = s.zh_words + middle + o.zh_words
    return Pair("".join(words), en, (s.zh, verb, o.zh), template, words)


def _have_sentence(template: str, s: _NP, size: str, colour: str, thing: str) -> Pair:
    noun, classifier, _ = THINGS[thing]
    adjectives = [a for a in (size, colour) if a]
    english = [SIZE_ADJECTIVES.get(a) or COLOUR_ADJECTIVES[a] for a in adjectives] + [noun]
    zh_object = "".join(adjectives) + thing
    object_words = tuple(adjectives) + (thing,)
    if template == "have":
        has = "has" if s.third_singular else "have"
        middle = ("有", "一", classifier)
        en = f"{s.subject} {has} {_indefinite(english)}"
    elif template == "not_have":
        do = "does" if s.third_singular else "do"
        middle = ("没有",)
        en = f"{s.subject} {do} not have {_indefinite(english)}"
    else:
        raise ValueError(f"not a have template: {template!r}")
    words = s.zh_words + middle + object_words
    return Pair("".join(words), en, (s.zh, "有", zh_object), template, words)


def _draw(template: str, rng: random.Random) -> Pair | None:
    """One random sentence of a template, or None when the draw is rejected."""
    if template in ("have", "not_have"):
        s = rng.choice(_OWNER_NPS)
        thing = rng.choice(tuple(THINGS))
        size = rng.choice(("", "", "大", "小", "旧"))
        colour = rng.choice(("", "", "白", "黑", "红"))
        if (size == "旧" and thing not in AGE_NOUNS) or (colour and colour not in THINGS[thing][2]):
            return None
        return _have_sentence(template, s, size, colour, thing)
    s, o = _draw_np(rng), _draw_np(rng)
    if s.zh == o.zh:  # 我喜欢我 would need a reflexive (myself)
        return None
    if template in ("habitual", "past", "past_neg"):
        verbs = EVENTIVE_VERBS
    elif template == "neg":
        verbs = NEGATABLE_VERBS
    else:
        verbs = tuple(VERBS)
    return _verb_sentence(template, s, rng.choice(verbs), o)


def _fits(pair: Pair) -> bool:
    return len(pair.zh) <= MAX_ZH_CHARS and len(pair.en.split()) <= MAX_EN_WORDS


# --- Public API ---------------------------------------------------------------------------
def generate_corpus(seed: int = 0) -> list[Pair]:
    """Draw TEMPLATE_SIZES[t] distinct sentences per template, plus SEED_EXAMPLES.

    Same seed → the same list, in the same order, in every process.
    """
    rng = random.Random(seed)
    pairs: list[Pair] = list(SEED_EXAMPLES)
    seen = {p.zh for p in pairs}
    for template in TEMPLATES:
        made = sum(p.template == template for p in pairs)
        tries = 0
        while made < TEMPLATE_SIZES[template]:
            tries += 1
            if tries > 100 * TEMPLATE_SIZES[template]:
                raise RuntimeError(f"template {template!r} cannot yield enough sentences")
            pair = _draw(template, rng)
            if pair is None or pair.zh in seen or not _fits(pair):
                continue
            seen.add(pair.zh)
            pairs.append(pair)
            made += 1
    rng.shuffle(pairs)
    return pairs


@functools.cache
def corpus_characters(seed: int = 0) -> frozenset[str]:
    """Every character of the Chinese sentences generate_corpus(seed) makes: what a translator trained on
    them has seen (a held-out sentence is made of atoms seen in training, so the training split has them
    all). About 2 s the first time (the corpus is drawn), cached after."""
    return frozenset("".join(pair.zh for pair in generate_corpus(seed)))


def _atoms(pair: Pair) -> tuple[tuple[str, str], ...]:
    """What a held-out sentence needs to have seen in training, each in the same role."""
    s, v, o = pair.triple
    t = pair.template
    return (
        ("subject", s),
        ("verb", v),
        ("object", o),
        ("template", t),
        ("template+subject", f"{t}|{s}"),
        ("template+verb", f"{t}|{v}"),
        ("template+object", f"{t}|{o}"),
    )


def split_corpus(
    pairs: list[Pair], seed: int = 0, heldout_fraction: float = 0.1
) -> tuple[list[Pair], list[Pair]]:
    """Split by (subject, verb, object) triple: a held-out triple never occurs in train.

    A triple is held out (with every sentence that has it: plain, negated, past, ...) only if
    each of its atoms (_atoms: the subject as subject, the verb, the object as object, the
    template and its pairings) still occurs in train, so a model can translate the held-out
    set compositionally. Triples of SEED_EXAMPLES always stay in train.
    """
    if not 0.0 <= heldout_fraction < 1.0:
        raise ValueError("heldout_fraction must be in [0, 1)")
    if any(p.triple == ("", "", "") for p in pairs):
        raise ValueError("split_corpus needs pairs with triples (from generate_corpus)")
    by_triple: dict[tuple[str, str, str], list[Pair]] = {}
    for p in pairs:
        by_triple.setdefault(p.triple, []).append(p)
    train_atoms = Counter(a for p in pairs for a in _atoms(p))
    keep = {p.triple for p in SEED_EXAMPLES}
    candidates = sorted(t for t in by_triple if t not in keep)
    random.Random(seed).shuffle(candidates)
    target = round(heldout_fraction * len(pairs))
    heldout_triples: set[tuple[str, str, str]] = set()
    n_heldout = 0
    for triple in candidates:
        if n_heldout >= target:
            break
        needed = Counter(a for p in by_triple[triple] for a in _atoms(p))
        if all(train_atoms[a] > n for a, n in needed.items()):
            train_atoms.subtract(needed)
            heldout_triples.add(triple)
            n_heldout += len(by_triple[triple])
    train = [p for p in pairs if p.triple not in heldout_triples]
    heldout = [p for p in pairs if p.triple in heldout_triples]
    return train, heldout
