"""Scanner for CUDA C++ source held in a candidate's string constants: scan_cpp() yields
(check, offset, subject) for each forbidden system header or identifier, skipping comments and
string/char literals. Pure text processing (a tokenizer, no C++ parser); the tables it matches
against live in static_rules.
"""
from __future__ import annotations

from typing import Iterator, Optional

from .static_rules import CPP_ANY, CPP_CALLS, CPP_INCLUDES, CPP_QUALIFIED


def scan_cpp(text: str) -> Iterator[tuple[str, int, str]]:
    """(check, offset, subject) for each forbidden include or identifier in C++ source."""
    code = _blank_comments_and_literals(text)
    yield from _scan_includes(code)
    tokens = _cpp_tokens(code)
    for index, (name, offset) in enumerate(tokens):
        if not (name[0].isalpha() or name[0] in "_:") or name == "::":
            continue
        before = tokens[index - 1][0] if index else ""
        after = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        check = _cpp_check(name, before, after)
        if check is not None:
            yield check, offset, name


def _cpp_check(name: str, before: str, after: str) -> Optional[str]:
    qualified = name.lstrip(":")
    for pattern, check in CPP_QUALIFIED:
        if qualified == pattern or qualified.startswith(pattern + "::"):
            return check
    last = qualified.rsplit("::", 1)[-1]
    if last in CPP_ANY:
        return CPP_ANY[last]
    is_free_call = after == "(" and before not in (".", "->")
    if is_free_call and qualified in (last, "std::" + last):
        return CPP_CALLS.get(last)
    return None


def _scan_includes(code: str) -> Iterator[tuple[str, int, str]]:
    """System headers (`#include <...>`); quoted includes were blanked with the literals."""
    offset = 0
    for line in code.splitlines(keepends=True):
        directive = line.strip().lstrip("#").lstrip()
        if line.lstrip().startswith("#") and directive.startswith("include"):
            header = directive[len("include"):].strip().lstrip("<").split(">")[0].strip()
            if header in CPP_INCLUDES:
                yield CPP_INCLUDES[header], offset, f"#include <{header}>"
        offset += len(line)


def _blank_comments_and_literals(text: str) -> str:
    """`text` with comments and string/char literals replaced by spaces (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = -1 if end < 0 else end + 2
        elif text[i] in "\"'":
            end = _literal_end(text, i)
        else:
            out.append(text[i])
            i += 1
            continue
        end = n if end < 0 else end
        out.append("".join(c if c == "\n" else " " for c in text[i:end]))
        i = end
    return "".join(out)


def _literal_end(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text) and text[i] not in (quote, "\n"):
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, len(text)) if i < len(text) and text[i] == quote else i


def _cpp_tokens(code: str) -> list[tuple[str, int]]:
    """Identifiers (merged with `::` into qualified names), `->` and single punctuation."""
    tokens: list[tuple[str, int]] = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c.isalpha() or c == "_" or (code.startswith("::", i)):
            start = i
            while i < n and (code[i].isalnum() or code[i] == "_" or code.startswith("::", i)):
                i += 2 if code.startswith("::", i) else 1
            tokens.append((code[start:i], start))
        elif c.isspace():
            i += 1
        else:
            width = 2 if code.startswith("->", i) else 1
            tokens.append((code[i:i + width], i))
            i += width
    return tokens
