"""Tokenisers: offsets index the text, round trips are exact, unknowns never raise."""

import time

import pytest

from model.tokenizer import (
    BASE_ALPHABET,
    SPECIAL_TOKENS,
    TOKENIZER_NAMES,
    TOKENIZERS_DIR,
    TextTokenizer,
    build_char_tokenizer,
    build_shipped_tokenizers,
    build_word_tokenizer,
    load_tokenizer,
    read_corpus,
    train_bpe_tokenizer,
)

PRESETS = [
    "你喜欢她",
    "她喜欢你",
    "我有一只猫",
    "你是人",
    "春风拂面桃花盛开景色宜人",
    "夜幕降临繁星点点月色朦胧",
    "书页翻动墨香四溢知识海洋",
    "晨跑归来汗水淋漓心情愉悦",
    "Your journey starts with one step",
    "I like her",
]
AWKWARD_TEXTS = [
    "Transformer里面的BPE算法 😀 and 注意力!",  # mixed scripts + emoji
    "👩‍👩‍👧 family, 🇨🇳 flag, e\u0301 combining",  # multi-code-point "characters"
    "مرحبا بالعالم",  # Arabic (RTL)
    "שלום עולם",  # Hebrew (RTL)
    '<p class="x">Hi &amp; 你好</p><script>alert(1)</script>',  # HTML
    "bell\x07 nul\x00 esc\x1b[31m cr\r\n tab\t end",  # control characters
    "𠀀𪚥 rare Han, \u3000 ideographic space, \xa0 nbsp",
    "  leading and trailing spaces, double  space  ",
    "[BOS] [UNK] [PAD] typed as plain text",
]
ALL_TEXTS = PRESETS + AWKWARD_TEXTS


def known_chars() -> set[str]:
    """The characters the char/bpe vocabularies must know: corpus plus printable ASCII."""
    zh_lines, en_lines = read_corpus()
    return set("".join(zh_lines + en_lines)) | set(BASE_ALPHABET)


def with_unknowns_replaced(text: str) -> str:
    return "".join(c if c in known_chars() else "\ufffd" for c in text)


@pytest.fixture(scope="module", params=TOKENIZER_NAMES)
def exact_tokenizer(request) -> TextTokenizer:
    """The tokenizers whose decode must give back the input (char, bpe)."""
    return load_tokenizer(request.param)


@pytest.mark.parametrize("text", PRESETS[:8])
def test_char_tokenizer_gives_one_token_per_chinese_character(text):
    enc = load_tokenizer("char").encode(text)
    assert list(enc.pieces) == list(text)
    assert list(enc.offsets) == [(i, i + 1) for i in range(len(text))]
    assert load_tokenizer("char").unk_id not in enc.ids


@pytest.mark.parametrize("text", ALL_TEXTS)
def test_offsets_tile_the_text_and_each_piece_is_its_substring(exact_tokenizer, text):
    enc = exact_tokenizer.encode(text)
    # Contiguous, in order, covering every Python str index exactly once.
    assert enc.offsets[0][0] == 0 and enc.offsets[-1][1] == len(text)
    for (_, end), (next_start, _) in zip(enc.offsets, enc.offsets[1:], strict=False):
        assert end == next_start
    for piece, token_id, (start, end) in zip(enc.pieces, enc.ids, enc.offsets, strict=True):
        if token_id == exact_tokenizer.unk_id:
            assert end - start == 1 and text[start] not in known_chars()
        else:
            assert text[start:end] == piece


@pytest.mark.parametrize("text", ALL_TEXTS)
def test_decode_of_encode_gives_the_text_back_modulo_unknowns(exact_tokenizer, text):
    enc = exact_tokenizer.encode(text, add_special_tokens=True)
    assert exact_tokenizer.decode(enc.ids) == with_unknowns_replaced(text)


@pytest.mark.parametrize("text", ["a  b\t\tc\n\nd   ", " 你 喜欢 她 ", "I like her"])
def test_spaces_round_trip_exactly_and_decode_adds_none(exact_tokenizer, text):
    assert exact_tokenizer.decode(exact_tokenizer.encode(text).ids) == text


def test_bytes_are_the_utf8_of_each_piece():
    text = "a你😀"
    enc = load_tokenizer("char").encode(text, add_special_tokens=True)
    assert [len(b) for b in enc.bytes] == [0, 1, 3, 4, 0]  # [BOS] a 你 😀 [EOS]
    assert b"".join(enc.bytes) == text.encode("utf-8")
    assert enc.bytes[2].decode("utf-8") == "你"


@pytest.mark.parametrize("name", ["char", "bpe", "word"])
@pytest.mark.parametrize("text", ["😀", "\x07", "𠀀", "\ud800", "\U0010ffff"])
def test_unknown_characters_become_unk_instead_of_raising(name, text):
    tok = load_tokenizer(name)
    enc = tok.encode(text)
    assert enc.ids == (tok.unk_id,)
    assert enc.pieces == ("[UNK]",)
    assert enc.offsets == ((0, 1),)
    assert tok.decode(enc.ids) == "\ufffd"
    assert len(enc.bytes) == 1  # even a lone surrogate does not raise


def test_special_token_ids_are_fixed_in_every_tokenizer():
    fresh = [
        build_char_tokenizer(["xyz"]),
        train_bpe_tokenizer(["abab abab"], min_frequency=1),
        build_word_tokenizer(["hello world"]),
    ]
    for tok in [load_tokenizer(n) for n in ("char", "bpe", "word")] + fresh:
        assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
        assert [tok.id_to_piece(i) for i in range(4)] == list(SPECIAL_TOKENS)
        enc = tok.encode("x", add_special_tokens=True)
        assert enc.ids[0] == tok.bos_id and enc.ids[-1] == tok.eos_id
        assert enc.is_special == (True,) + (False,) * (len(enc) - 2) + (True,)
        assert enc.offsets[0] == enc.offsets[-1] == (0, 0)
        # Typed text "[BOS]" is five characters of text, never the control token.
        typed = tok.encode("[BOS]")
        assert tok.bos_id not in typed.ids and not any(typed.is_special)


def test_empty_text_gives_an_empty_encoding():
    for name in ("char", "bpe", "word"):
        tok = load_tokenizer(name)
        enc = tok.encode("")
        assert len(enc) == 0 and enc.pieces == () and enc.bytes == ()
        assert tok.encode("", add_special_tokens=True).ids == (tok.bos_id, tok.eos_id)
        assert tok.decode([]) == ""


def test_ten_thousand_characters_encode_quickly():
    text = ("春风拂面桃花盛开景色宜人 I like her. 😀\n" * 400)[:10_000]
    for name in ("char", "bpe", "word"):
        tok = load_tokenizer(name)
        start = time.perf_counter()
        enc = tok.encode(text)
        assert time.perf_counter() - start < 1.0
        if name == "char":
            assert len(enc) == 10_000
    unspaced = "你" * 10_000  # one BPE pre-token of 10,000 characters
    start = time.perf_counter()
    assert "".join(load_tokenizer("bpe").encode(unspaced).pieces) == unspaced
    assert time.perf_counter() - start < 1.0


def test_bpe_splits_an_unspaced_chinese_sentence_into_several_tokens():
    bpe = load_tokenizer("bpe")
    for text in PRESETS[:8]:
        enc = bpe.encode(text)
        assert len(enc) > 1, text
        assert "".join(enc.pieces) == text


def test_bpe_merges_a_frequent_chinese_word_and_keeps_the_permutation_demo():
    """喜欢 is one token, so 你喜欢她 and 她喜欢你 are the same tokens in another order
    (the permutation-equivariance demo needs exactly that)."""
    bpe = load_tokenizer("bpe")
    a, b = bpe.encode("你喜欢她"), bpe.encode("她喜欢你")
    assert a.pieces == ("你", "喜欢", "她")
    assert b.pieces == ("她", "喜欢", "你")
    assert sorted(a.ids) == sorted(b.ids)


def test_bpe_trained_on_a_tiny_corpus_merges_inside_han_runs_only():
    texts = [
        "我喜欢猫",
        "你喜欢狗",
        "他喜欢鱼",
        "她喜欢书",
        "I like cats",
        "you like dogs",
        "we like",
    ]
    bpe = train_bpe_tokenizer(texts, min_frequency=3)
    assert bpe.encode("我喜欢书").pieces == ("我", "喜欢", "书")  # 我喜, 欢书: seen < 3 times
    assert " like" in bpe.encode("they like fish").pieces  # the space rides on the word
    assert bpe.encode("猫 like").pieces == ("猫", " like")  # no merge across scripts


def test_char_vocabulary_covers_the_corpus_and_the_presets():
    char = load_tokenizer("char")
    zh_lines, en_lines = read_corpus()
    for text in zh_lines + en_lines + PRESETS:
        assert char.unk_id not in char.encode(text).ids, text


def test_word_tokenizer_lowercases_and_isolates_han_characters():
    word = load_tokenizer("word")
    text = "I like her."
    enc = word.encode(text)
    assert enc.pieces == ("i", "like", "her", ".")
    for piece, (start, end) in zip(enc.pieces, enc.offsets, strict=True):
        assert text[start:end].lower() == piece
    assert word.decode(enc.ids) == "i like her."
    assert word.unk_id not in word.encode("Your journey starts with one step.").ids
    han = build_word_tokenizer(["我有一只猫"])
    assert han.encode("我有一只猫").pieces == tuple("我有一只猫")


def test_shipped_files_equal_what_the_build_script_produces(tmp_path):
    for name, tok in build_shipped_tokenizers().items():
        tok.save(tmp_path / f"{name}.json")
        shipped = (TOKENIZERS_DIR / f"{name}.json").read_bytes()
        assert (tmp_path / f"{name}.json").read_bytes() == shipped, name


def test_save_then_load_gives_the_same_encodings(tmp_path):
    bpe = load_tokenizer("bpe")
    bpe.save(tmp_path / "copy.json")
    again = TextTokenizer.from_file(tmp_path / "copy.json")
    assert again.name == "copy" and again.vocab_size == bpe.vocab_size
    for text in ALL_TEXTS:
        assert again.encode(text) == bpe.encode(text)


def test_missing_or_corrupt_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(FileNotFoundError, match="nope.json"):
        TextTokenizer.from_file(missing)
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="corrupt.json"):
        TextTokenizer.from_file(corrupt)
    # A valid tokenizers file whose special tokens sit at other ids is refused too.
    from tokenizers import Tokenizer, models

    wrong = tmp_path / "wrong_ids.json"
    Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).save(str(wrong))
    with pytest.raises(ValueError, match="wrong_ids.json"):
        TextTokenizer.from_file(wrong)


def test_load_tokenizer_is_cached_and_refuses_unknown_names():
    assert load_tokenizer("char") is load_tokenizer("char")
    with pytest.raises(ValueError, match="unknown tokenizer"):
        load_tokenizer("sentencepiece")


def test_out_of_range_ids_raise_a_clear_error():
    char = load_tokenizer("char")
    with pytest.raises(IndexError, match="outside the vocabulary"):
        char.id_to_piece(char.vocab_size)
    with pytest.raises(IndexError, match="outside the vocabulary"):
        char.decode([5, -1])



def test_encoding_what_is_not_text_is_a_type_error_and_a_tokenizer_says_what_it_is():
    char = load_tokenizer("char")
    with pytest.raises(TypeError, match=r"encode\(\) takes a str, got list"):
        char.encode(["你", "好"])
    assert repr(char) == f"TextTokenizer(name='char', vocab_size={char.vocab_size})"


def test_a_tokenizer_file_that_is_not_utf8_names_the_file(tmp_path):
    latin = tmp_path / "latin.json"
    latin.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match="cannot read tokenizer file .*latin.json"):
        TextTokenizer.from_file(latin)
