#!/usr/bin/env python3
"""Writes tests/data/tokenizer-fixture.txt: what openai-whisper's tokenizer (tiktoken) says about
Whisper's two encodings, for tests/test_vocab.c.

Encodings: "gpt2" (.en models, get_tokenizer(False)), "multilingual" (get_tokenizer(True)) and
"multilingual100" (large-v3, num_languages=100). Line formats (fields separated by one space;
byte strings in hex, "-" for an empty one; id lists comma-separated, "-" for an empty list):

  layout <enc> n_vocab eot sot translate transcribe sot_lm sot_prev no_speech no_timestamps
         timestamp_begin n_languages
  hash <enc> <FNV-1a 64 over ids < eot of (u32 LE length, bytes)>   exact BPE token bytes
  specials <enc> <text of id eot> <text of eot+1> ... up to timestamp_begin-1
  timestamps <"0.00" "0.02" ... "30.00">        the text of <|t|> is "<|" t "|>"
  nonspeech <enc> <ids>                          tokenizer.non_speech_tokens
  enc <enc> <text hex> <ids>                     encoding.encode(text, disallowed_special=())
  dec <enc> <ids> <utf-8 hex>                    encoding.decode of the ids < eot

Usage: python3 tools/gen-tokenizer-fixture.py [out]   (needs openai-whisper and tiktoken)
"""
import os
import random
import sys

from whisper.tokenizer import get_tokenizer

ENCODINGS = {
    "gpt2": get_tokenizer(False),
    "multilingual": get_tokenizer(True),
    "multilingual100": get_tokenizer(True, num_languages=100),
}

TEXTS = [
    "",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    " \n",
    "\n ",
    "a",
    " a",
    "Hello world",
    " Hello world",
    "Hello, world!",
    "And so my fellow Americans, ask not what your country can do for you, ask what you can "
    "do for your country.",
    " ask not what your country can do for you",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX",
    "hello   world",
    "hello \t world",
    "trailing spaces   ",
    "   leading spaces",
    "line one\nline two\n\nline four",
    "windows\r\nline endings\r\n",
    "tabs\tand\ttabs\t\t",
    "a\u00a0b",  # NO-BREAK SPACE
    "a\u3000b",  # IDEOGRAPHIC SPACE
    "a\u2028b\u2029c",  # line / paragraph separators
    "a\u180eb",  # MONGOLIAN VOWEL SEPARATOR: not White_Space any more
    "a\u200bb",  # ZERO WIDTH SPACE: not White_Space
    "a\u0085b",  # NEXT LINE
    "a\u001fb\u001cc",  # Python isspace() but not White_Space
    "a\u2009b\u202fc\u205fd\u1680e",
    "\ufeffBOM",
    "I'm sure you're right, they've said it's what we'll do, I'd think.",
    "I'M SURE YOU'RE RIGHT",
    "don't won't can't shouldn't",
    "'s 're 've 'm 'll 'd 't",
    "''s",
    " 's",
    "it’s curly",
    "rock 'n' roll",
    "12345",
    "3.14159",
    "1,000,000",
    "in 1984 and 2024, 42 people",
    "0123456789012345678901234567890",
    "$100 50% #1 @user a+b=c (x) [y] {z} <w> ~tilde~ `code` |pipe| \\back/ ^caret_ ;:",
    "...",
    "!!!",
    "?!?!",
    "--",
    "- hello",
    " - hello",
    " 'quoted'",
    '"double quoted"',
    " (laughs)",
    "[MUSIC]",
    " [Music]",
    "♪ la la la ♪",
    "♪♪",
    "♪♪♪",
    "♩♪♫♬♭♮♯",
    " ♩ ♪ ♫ ♬ ♭ ♮ ♯",
    "「こんにちは」『世界』",
    "<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }}",
    "<|endoftext|>",
    "<|startoftranscript|><|en|><|transcribe|><|0.00|>",
    "Grüße aus München, schöne Straße",
    "Ça va? Très bien, merci. L'été à Noël",
    "¿Dónde está la biblioteca? Mañana, señor.",
    "Ελληνικά: Καλημέρα κόσμε",
    "Русский текст: Привет, мир! Ёлка",
    "Українська: Ґанок, їжак, є",
    "中文文本：你好，世界！这是一个测试。",
    "日本語のテキスト：こんにちは、世界。カタカナとひらがな。",
    "한국어 텍스트: 안녕하세요, 세계!",
    "العربية: مرحبا بالعالم",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया",
    "ภาษาไทย: สวัสดีชาวโลก",
    "Tiếng Việt: Xin chào thế giới",
    "Türkçe: İstanbul'a gidiyorum, ığdır",
    "Polski: Zażółć gęślą jaźń",
    "ქართული ენა",
    "Հայերեն",
    "ᏣᎳᎩ",
    "e\u0301 combining acute, n\u0303",
    "emoji 😀😃😄 👍🏽 👨‍👩‍👧 🇫🇷 ❤️",
    "😀",
    " 😀",
    "math ∑∫√∞ ≤≥≠ αβγ",
    "fullwidth ＡＢＣ１２３",
    "roman Ⅻ numerals ½ ¾ ² ³ ٣ ४",  # \p{N}: Nl, No, Nd in other scripts
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕬𝖇𝖈",
    "\U00020000\U0002a6d6 CJK ext B",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ababababababababababababababababababababababababababababababababababababababab",
    " " * 40 + "x",
    "\n" * 10,
    "!" * 70,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "https://example.com/path?query=1&x=y#frag",
    "user@example.com",
    "C:\\Windows\\System32",
    "def f(x):\n    return x ** 2\n",
]

# pieces for random texts
POOL = [
    " ", "  ", "\n", "\t", "a", "b", "Z", "the", " the", "'s", "'", "'re", "'ll", "1", "23", "456",
    ".", ",", "!", "?", "-", "--", "(", ")", "[", "]", "♪", "♫", "é", "ü", "ß", "ñ", "я", "ж", "中",
    "文", "の", "カ", "한", "글", "ع", "ب", "ש", "न", "ก", "😀", "👍", "🏽", "\u200d", "\u00a0", "\u3000",
    "\u0301", "½", "²", "٣", "Ⅻ", "€", "$", "%", "&", "*", "_", "«", "»", "“", "”", "…", "—",
    "\u2028", "\r\n", "I", "you", "We", " are", "don", "t", "’", "x",
]

UTF8_CASES = [
    b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2", b"\xc2\x41", b"\xc2\x80", b"\xdf\xbf",
    b"\xe0", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa0", b"\xe0\xa0\x41", b"\xe0\xa0\x80",
    b"\xe1\x80", b"\xe1\x80\x41", b"\xec\xbf\xbf", b"\xed\x9f\xbf", b"\xed\xa0\x80",
    b"\xed\xbf\xbf", b"\xee\x80\x80", b"\xef\xbf\xbd", b"\xef\xbf\xbf", b"\xf0", b"\xf0\x80",
    b"\xf0\x8f\xbf\xbf", b"\xf0\x90", b"\xf0\x90\x80", b"\xf0\x90\x80\x41", b"\xf0\x90\x80\x80",
    b"\xf1\x80\x80\x80", b"\xf3\xbf\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80", b"\xfe\xff",
    b"\xff", b"a\x80b", b"\xe4\xbd\xa0\xe5\xa5", b"\xe5\xa5\xbd", b"\x80\x80\x80",
    b"\xc2\xc2\x80", b"\xe2\x82\xac\xe2\x82", b"\xf0\x9f\x98\x80\xf0\x9f\x98",
]


def ids_str(ids):
    return ",".join(map(str, ids)) if ids else "-"


def hex_str(b):
    return b.hex() if b else "-"


def fnv1a64(tok, eot):
    h = 0xCBF29CE484222325
    for i in range(eot):
        b = tok.encoding.decode_single_token_bytes(i)
        for c in len(b).to_bytes(4, "little") + b:
            h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "tests", "data", "tokenizer-fixture.txt")
    rng = random.Random(20250625)
    lines = ["# Generated by tools/gen-tokenizer-fixture.py from openai-whisper's tokenizer "
             "(tiktoken). Do not edit."]
    for name, tok in ENCODINGS.items():
        n_langs = len(tok.all_language_tokens)
        lines.append("layout %s %d %d %d %d %d %d %d %d %d %d %d" % (
            name, tok.encoding.n_vocab, tok.eot, tok.sot, tok.translate, tok.transcribe,
            tok.sot_lm, tok.sot_prev, tok.no_speech, tok.no_timestamps, tok.timestamp_begin,
            n_langs))
        lines.append("hash %s %016x" % (name, fnv1a64(tok, tok.eot)))
        specials = [tok.encoding.decode_single_token_bytes(i).decode()
                    for i in range(tok.eot, tok.timestamp_begin)]
        lines.append("specials %s %s" % (name, " ".join(specials)))
        lines.append("nonspeech %s %s" % (name, ids_str(tok.non_speech_tokens)))
    tok = ENCODINGS["multilingual"]
    ts = [tok.encoding.decode_single_token_bytes(tok.timestamp_begin + i).decode()
          for i in range(1501)]
    assert all(t.startswith("<|") and t.endswith("|>") for t in ts)
    lines.append("timestamps " + " ".join(t[2:-2] for t in ts))

    texts = list(TEXTS)
    for _ in range(200):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 14))))
    for name in ("gpt2", "multilingual"):
        enc = ENCODINGS[name].encoding
        for t in texts:
            lines.append("enc %s %s %s" % (name, hex_str(t.encode()),
                                           ids_str(enc.encode(t, disallowed_special=()))))

    # decoding: byte sequences as single-byte tokens, random token sequences with specials
    for name in ("gpt2", "multilingual"):
        tok = ENCODINGS[name]
        enc = tok.encoding
        byte_rank = {b: enc.encode_single_token(bytes([b])) for b in range(256)}
        cases = list(UTF8_CASES)
        for _ in range(80):
            cases.append(bytes(rng.choice([rng.randint(0x80, 0xff), rng.randint(0xc0, 0xf7),
                                            rng.randint(0x20, 0x7e), rng.randint(0x80, 0xbf)])
                               for _ in range(rng.randint(1, 10))))
        for b in cases:
            ids = [byte_rank[c] for c in b]
            lines.append("dec %s %s %s" % (name, ids_str(ids),
                                           hex_str(b.decode("utf-8", errors="replace").encode())))
        lossy = [i for i in range(tok.eot)
                 if enc.decode_single_token_bytes(i).decode("utf-8", errors="replace").encode()
                 != enc.decode_single_token_bytes(i)]
        for _ in range(100):
            ids = []
            for _ in range(rng.randint(0, 12)):
                r = rng.random()
                if r < 0.4:
                    ids.append(rng.choice(lossy))
                elif r < 0.85:
                    ids.append(rng.randrange(tok.eot))
                else:
                    ids.append(rng.randrange(tok.eot, enc.n_vocab))
            text = enc.decode([i for i in ids if i < tok.eot])
            lines.append("dec %s %s %s" % (name, ids_str(ids), hex_str(text.encode())))
        for t in (t for t in TEXTS if not t.isascii()):  # round trips, split characters included
            ids = enc.encode(t, disallowed_special=())
            lines.append("dec %s %s %s" % (name, ids_str(ids), hex_str(enc.decode(ids).encode())))

    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out_path}: {len(lines)} lines")


if __name__ == "__main__":
    main()
