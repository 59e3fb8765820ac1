#!/usr/bin/env python3
"""Records llama.cpp's tokenizer behaviour on SmolLM2 as a test fixture.

The C++ tokenizer (mini_engine/model/tokenizer.cpp) must give the token ids llama.cpp gives, since
the model was trained on them. This script asks llama.cpp itself, through llama-cpp-python
(`Llama(model_path, vocab_only=True)`), and writes what it says to
tests/fixtures/tokenizer_smollm2.json; tests/model/test_tokenizer.cpp replays it. The normal test
run only reads the JSON: llama-cpp-python is an optional dev dependency (see
tools/requirements-oracle.txt), needed only to regenerate the fixture.

What is recorded:
  encode   about 100 byte strings (ASCII, accents, CJK, emoji, code, digits, white-space runs,
           special tokens, invalid UTF-8, bytes without a token): ids with special parsing on/off
           (Llama.tokenize(bytes, add_bos=False, special=True/False)), and llama_detokenize of
           the ids with and without special-token text.
  decode   hand-picked id lists (an emoji split over tokens, every special token, the last ids)
  pieces   an FNV-1a 64 hash over every token's piece (llama_token_to_piece), special on and off,
           so the test checks all 49152 pieces without storing them
  chat     conversations rendered by llama-cpp-python's Jinja2ChatFormatter from the GGUF's own
           tokenizer.chat_template, and their ids
  aborts   inputs on which llama.cpp's tokenizer throws inside the C API and the process dies;
           each is run in a child process and the outcome recorded (the C++ tokenizer refuses
           them with std::invalid_argument instead)
  vocab    vocabulary size, bos/eos ids, add_bos, the end-of-generation set among the specials

Usage (from the repository root; tools/oracle/setup_venv installs tools/requirements-oracle.txt
into .venv/):
  tools/oracle/setup_venv
  .venv/bin/python tools/oracle/make_tokenizer_fixtures.py [--model PATH] [--out PATH]
"""
import argparse
import ctypes
import hashlib
import json
import os
import platform
import re
import subprocess
import sys

FIXTURE = os.path.join("tests", "fixtures", "tokenizer_smollm2.json")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

LONG_TEXT = (
    "Speculative decoding lets a small, cheap drafter propose several tokens which the large "
    "target model then checks in a single forward pass. When the drafts match what the target "
    "would have produced anyway, we keep them all and gain speed for free; when they do not, we "
    "keep the matching prefix and the target's own correction. The output is identical to plain "
    "greedy decoding - only the time changes.\n\n"
    "Prompt lookup is the simplest drafter of all: it searches the context for the most recent "
    "earlier occurrence of the last n tokens and proposes whatever followed them. It costs almost "
    "nothing, needs no second model, and works remarkably well on code editing, summarization "
    "and retrieval-augmented answers, where the output copies long stretches of the input.\n\n"
    "    def ngram_propose(context, n, k):\n"
    "        for start in range(len(context) - n - 1, -1, -1):\n"
    "            if context[start:start + n] == context[-n:]:\n"
    "                return context[start + n:start + n + k]\n"
    "        return []\n\n"
    "Numbers such as 3.14159, 2024-06-01 and 1,000,000 are split digit by digit; prices like "
    "$19.99 and percentages like 42% too. Accents (café, naïve, Ærøskøbing), CJK (日本語, 中文, "
    "한국어) and emoji (😀🚀🎉) go through the same byte-level machinery.   Trailing spaces   \n"
)

CASES = [
    # ASCII words and contractions
    ("hello", "Hello world"),
    ("sentence", "Hello, world! How are you?"),
    ("pangram", "The quick brown fox jumps over the lazy dog."),
    ("contractions", "I've got it's they're we'll I'd you're I'm she'd"),
    ("upper_contractions", "DON'T SHOUT'S IT'LL"),
    ("leading_contraction", "'s at the start and 'll"),
    ("apostrophes", "a'b'c''d''' 'tis rock'n'roll"),
    ("single_letter", "a"),
    ("mixed_case", "camelCaseIdentifier snake_case_name SCREAMING_CASE"),
    # white space
    ("leading_space", " leading space"),
    ("trailing_space", "trailing space "),
    ("trailing_spaces", "trailing spaces   "),
    ("two_leading", "  two leading spaces"),
    ("space_runs", "multiple    spaces   between  words"),
    ("tabs", "tab\tseparated\t\tvalues\t"),
    ("newlines", "line one\nline two\n\nline four\n"),
    ("only_newlines", "\n\n\n"),
    ("crlf", "windows\r\nline\r\nendings\r\n"),
    ("one_space", " "),
    ("five_spaces", "     "),
    ("mixed_ws", "\t \n \t"),
    ("space_newline_space", "a \n b"),
    ("spaces_around_newline", "x  \n  y"),
    ("unicode_spaces", "\u00a0nbsp\u00a0 and\u2009thin\u3000ideographic\u202fnarrow"),
    ("nel_linesep", "\u0085 NEL and \u2028 line sep \u2029 para"),
    ("vertical_tab_ff", "a\x0bb\x0cc"),
    ("hundred_spaces", " " * 100),
    ("unicode_space_runs", "x \u00a0y a\u3000\u3000b \u2009\u2009. end\u00a0\u00a0"),
    ("unicode_space_punct", "!\u00a0? (\u3000) \u00a0\u00a0-- \u2028\u2028x"),
    # digits next to white space: the digit split ends a stretch, so a space run before a digit
    # stays whole instead of lending its last space to the digit
    ("spaces_before_digits", "total:  42 and\t\t7 x   2024"),
    ("numbered_list", "    1. item\n    2. item\n"),
    # digits and numbers of other scripts
    ("digits", "12345"),
    ("decimals", "3.14159 and 2,718"),
    ("versions", "year 2024, version 1.2.3"),
    ("space_digits", " 42"),
    ("digits_in_words", "x1y22z333"),
    ("other_numbers", "①②③ Ⅻ ½ ¾ ²³"),
    ("arabic_indic_digits", "٣٤٥ and ४२"),
    ("superscripts", "E=mc² x₁"),
    # accents and other Latin
    ("accents", "Café crème brûlée, naïve façade"),
    ("diacritics", "Ünïcödé — em dash – en dash"),
    ("latin_ext", "Straße Øresund Łódź Ærøskøbing"),
    ("combining", "e\u0301 combining acute, n\u0303"),
    # other scripts
    ("japanese", "日本語のテキストです。"),
    ("chinese", "中文测试：你好，世界！"),
    ("korean", "한국어 텍스트"),
    ("russian", "Привет, мир!"),
    ("greek", "Γειά σου Κόσμε"),
    ("arabic", "مرحبا بالعالم"),
    ("hebrew", "שלום עולם"),
    ("thai", "ภาษาไทย"),
    ("hindi", "हिन्दी भाषा"),
    # emoji and 4-byte characters
    ("emoji", "😀"),
    ("emoji_text", "I ❤️ emoji 😀🎉🚀"),
    ("zwj_family", "👨‍👩‍👧‍👦 family"),
    ("flags", "🇫🇷🇯🇵 flags"),
    ("math_letters", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math"),
    ("skin_tone", "👍🏽 ok"),
    # code
    ("python", "def f(x):\n    return x**2 + 1\n"),
    ("c_loop", "for (int i = 0; i < n; ++i) { sum += a[i]; }"),
    ("cpp_include", "#include <vector>\nint main() { return 0; }"),
    ("python_tabs", "if x != y && z >= 3:\n\tprint(\"ok\")"),
    ("json", '{"key": [1, 2, 3], "nested": {"a": null}}'),
    ("url", "https://example.com/path?q=1&r=two#frag"),
    ("indented", "    indented code\n        more\n"),
    ("html", "<div class=\"x\">Hi &amp; bye</div>"),
    # punctuation
    ("punct_runs", "!!! ??? ... --- ***"),
    ("quotes", "\"quoted\" 'single' `backtick`"),
    ("symbols", "$100 @user #tag %20 ^caret ~tilde | pipe"),
    # special tokens
    ("chat_turn", "<|im_start|>user\nHi<|im_end|>\n"),
    ("endoftext", "<|endoftext|>"),
    ("special_inside", "text<|im_end|>text"),
    ("adjacent_specials", "<|im_start|><|im_start|><|im_end|>"),
    ("partial_special", "<|im_start user"),
    ("spaced_specials", "<|im_end|> spaced <|endoftext|> "),
    ("code_specials", "<reponame>foo<filename>bar.py<file_sep>x = 1"),
    ("wrong_case_special", "<|IM_END|>"),
    ("nested_brackets", "<<|im_end|>>"),
    ("special_then_space", "<|im_start|> assistant"),
    # invalid UTF-8 and odd bytes
    ("invalid_ff", b"\xff"),
    ("stray_continuation", b"abc\x80def"),
    ("truncated_3byte", b"\xe2\x82"),
    ("truncated_then_text", b"\xe2\x82 text"),
    ("overlong_nul", b"\xc0\x80"),
    ("surrogate", b"\xed\xa0\x80"),
    ("truncated_emoji", b"\xf0\x9f\x98"),
    ("max_codepoint", b"\xf4\x8f\xbf\xbf"),
    ("invalid_around_special", b"\xe2<|im_end|>\x82\xac"),
    ("latin1_bytes", b"caf\xe9 na\xefve"),
    ("bytes_without_token", b"\x04\x06\x13\x14\x16\x1d control"),
    ("nul_byte", b"\x00 null"),
    ("del_byte", b"\x7f del"),
    ("plane5", "\U00050000 unassigned plane"),
    ("private_use", "\ue000\U000f0000"),
    ("unassigned", "\u0378 unassigned"),
    ("all_ascii", bytes(range(128))),
    # length
    ("empty", b""),
    ("long_text", LONG_TEXT),
    ("repeated_letter", "a" * 64),
    ("long_word", "ab" * 200),
    ("long_number", "1234567890" * 10),
]

DECODE_CASES = [
    ("emoji_split", None),  # filled in from the ids of "😀🎉🚀"
    ("specials", list(range(17))),
    ("last_ids", [49148, 49149, 49150, 49151]),
    ("mixed", [19556, 1, 2, 0, 905]),
]

CHATS = [
    ("user_only", [{"role": "user", "content": "What is 2+2?"}]),
    ("with_system", [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Name a prime."}]),
    ("multi_turn", [{"role": "user", "content": "Hi!"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke about cats 🐱."}]),
    ("empty", []),
    ("assistant_first", [{"role": "assistant", "content": "I start."}]),
    ("unicode_code", [{"role": "user", "content": "Écris `print(\"héllo\")`\n\tand 123."}]),
    ("empty_content", [{"role": "user", "content": ""}]),
]

ABORT_CASES = [
    ("above_max_f4", b"\xf4\x90\x80\x80"),
    ("lead_f5", b"ok \xf5\x80\x80\x80"),
    ("lead_f7", b"\xf7\xbf\xbf\xbf"),
]


def fnv1a64(chunks):
    h = 0xCBF29CE484222325
    for c in chunks:
        for b in len(c).to_bytes(4, "little") + c:
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def as_bytes(s):
    return s if isinstance(s, bytes) else s.encode("utf-8")


def load(model):
    from llama_cpp import Llama
    return Llama(model_path=model, vocab_only=True, verbose=False)


def detokenize(llm, ids, special):
    import llama_cpp
    n = len(ids)
    arr = (llama_cpp.llama_token * max(n, 1))(*ids)
    cap = 64 * n + 64
    buf = ctypes.create_string_buffer(cap)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    got = llama_cpp.llama_detokenize(vocab, arr, n, buf, cap, False, special)
    assert 0 <= got <= cap, got
    return buf.raw[:got]


def piece(llm, vocab, tid, special):
    import llama_cpp
    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(vocab, tid, buf, 256, 0, special)
    assert 0 <= n <= 256, (tid, n)
    return buf.raw[:n]


def probe(model, hexstr):
    """Child-process mode: tokenize one input and print the ids (or die trying)."""
    llm = load(model)
    print(json.dumps(llm.tokenize(bytes.fromhex(hexstr), add_bos=False, special=True)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="GGUF path (default: tools/fetch_model's)")
    ap.add_argument("--out", default=FIXTURE)
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    model = args.model or subprocess.check_output(
        [sys.executable, os.path.join("tools", "fetch_model")], text=True).strip()
    if args.probe is not None:
        return probe(model, args.probe)

    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    import jinja2

    with open(model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    if sha != MODEL_SHA256:
        sys.exit(f"unexpected model checksum {sha}")
    llm = load(model)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    n_vocab = llm.n_vocab()

    names = set()
    encode = []
    for name, text in CASES:
        assert name not in names, name
        names.add(name)
        raw = as_bytes(text)
        ids_special = llm.tokenize(raw, add_bos=False, special=True)
        ids_plain = llm.tokenize(raw, add_bos=False, special=False)
        entry = {"name": name, "hex": raw.hex()}
        try:
            entry["text"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        entry["ids_special"] = ids_special
        entry["ids_plain"] = ids_plain
        entry["decoded_special_hex"] = detokenize(llm, ids_special, True).hex()
        entry["decoded_plain_hex"] = detokenize(llm, ids_special, False).hex()
        encode.append(entry)

    decode = []
    emoji_ids = llm.tokenize("😀🎉🚀".encode(), add_bos=False, special=False)
    for name, ids in DECODE_CASES:
        ids = emoji_ids if ids is None else ids
        decode.append({"name": name, "ids": ids,
                       "special_hex": detokenize(llm, ids, True).hex(),
                       "plain_hex": detokenize(llm, ids, False).hex()})

    pieces = {
        "hash": "FNV-1a 64 over (uint32 little-endian length, bytes) of every token's piece, "
                "ids 0..n_vocab-1",
        "special": fnv1a64(piece(llm, vocab, t, True) for t in range(n_vocab)),
        "plain": fnv1a64(piece(llm, vocab, t, False) for t in range(n_vocab)),
    }

    template = llm.metadata["tokenizer.chat_template"]
    eos = llm.detokenize([llm.token_eos()], special=True).decode()
    bos = llm.detokenize([llm.token_bos()], special=True).decode()
    chats = []
    for name, messages in CHATS:
        for agp in (True, False):
            fmt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                      add_generation_prompt=agp)
            prompt = fmt(messages=messages).prompt
            chats.append({"name": f"{name}{'' if agp else '_no_gen'}", "messages": messages,
                          "add_generation_prompt": agp, "prompt": prompt,
                          "ids": llm.tokenize(prompt.encode(), add_bos=False, special=True)})

    aborts = []
    for name, raw in ABORT_CASES:
        p = subprocess.run([sys.executable, __file__, "--model", model, "--probe", raw.hex()],
                           capture_output=True, text=True)
        outcome = (f"ids {p.stdout.strip()}" if p.returncode == 0 else
                   f"process died: signal {-p.returncode}" if p.returncode < 0 else
                   f"exit {p.returncode}")
        aborts.append({"name": name, "hex": raw.hex(), "llama_cpp": outcome,
                       "stderr_tail": p.stderr.strip().splitlines()[-1:] if p.stderr else []})

    specials = list(range(17))
    fixture = {
        "about": "llama.cpp's tokenization of SmolLM2-135M-Instruct (Q4_1 GGUF), recorded by "
                 "tools/oracle/make_tokenizer_fixtures.py; replayed by "
                 "tests/model/test_tokenizer.cpp",
        "generator": {
            "llama_cpp_python": llama_cpp.__version__,
            "jinja2": jinja2.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "model_file": MODEL_FILE,
            "model_sha256": sha,
            "settings": "Llama(model_path, vocab_only=True); tokenize(bytes, add_bos=False, "
                        "special=True|False); llama_detokenize(remove_special=False, "
                        "unparse_special=True|False); llama_token_to_piece(lstrip=0); "
                        "Jinja2ChatFormatter(tokenizer.chat_template, add_generation_prompt)",
        },
        "vocab": {
            "n_vocab": n_vocab,
            "bos": llm.token_bos(),
            "eos": llm.token_eos(),
            "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
            "eog_among_specials": [t for t in specials if llama_cpp.llama_vocab_is_eog(vocab, t)],
            "control_among_specials": [t for t in specials
                                       if llama_cpp.llama_vocab_is_control(vocab, t)],
            "chat_template": template,
        },
        "encode": encode,
        "decode": decode,
        "pieces": pieces,
        "chat": chats,
        "aborts": aborts,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    text = json.dumps(fixture, ensure_ascii=False, indent=1)
    # Keep lists of numbers on one line: the file stays short and diffs stay readable.
    text = re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(f"wrote {args.out}: {len(encode)} encode cases, {len(chats)} chats, "
          f"{len(aborts)} abort probes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
