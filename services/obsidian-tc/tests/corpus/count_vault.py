#!/usr/bin/env python3
"""Independent counter of what an Obsidian vault contains.

    python3 count_vault.py VAULT_DIR   ->  one JSON object on stdout

This is a *reference oracle* for the integration tests: it does not import, call or
port the project's Rust parser; it is written from Obsidian's documented and observed
semantics, using only the Python 3.11 standard library (no YAML or Markdown package).

Output:
    {"notes", "body_links", "embeds", "property_links", "tags", "unresolved",   (totals)
     "per_note": {path: {"body_links", "embeds", "property_links", "tags", "unresolved"}},
     "unresolved_targets": {path: [target, ...]},          (notes with any, file order)
     "resolved": {path: [[target, resolved_path], ...]}}   (notes with any, file order)
Counts are occurrences, not distinct targets.  Paths are vault-relative with '/'.

Files: everything under VAULT_DIR except .git/, .trash/, .otc-sync/,
.obsidian/workspace.json, .obsidian/workspace-mobile.json, .obsidian/cache,
.DS_Store and Thumbs.db.  Notes are the files whose name ends in ".md"
(case-sensitive); every file (any extension, .obsidian/ included) is a link target.
Canvases (".canvas", JSON Canvas 1.0) are no notes but hold links: each file node's
"file" is an embed, and each text node's "text" is read as a note is (its links count,
its tags do not); a canvas that is not JSON holds none.  They count in the totals and
in "unresolved_targets" / "resolved", not in "notes" or "per_note".
Text is read as UTF-8 (undecodable bytes replaced), a leading BOM is dropped and
CRLF / CR line endings count as LF.

Rules:
* Frontmatter: line 1 is exactly '---' (trailing blanks allowed) and a later line
  '---' or '...' closes it; the body starts after the closing line.  Without a
  closing line there is no frontmatter.  The YAML between is read by a small YAML
  reader (block/flow collections, plain/quoted/block scalars, comments; duplicate
  keys and syntax errors make it invalid).  Invalid YAML, or a top level that is not
  a mapping, yields no tags and no property links (the body is still read).
  - property links: every [[...]] (or ![[...]]) inside a *string* value anywhere in
    the mapping (quoted, plain or block scalar; keys are not looked at).  An
    unquoted `key: [[X]]` is a YAML flow list holding the string "X", so no link.
  - tags: top-level key matching /^tags?$/i; a list gives one tag per non-empty item,
    a string is split on commas and whitespace; a leading '#' is stripped.
* Body block structure follows CommonMark: block quotes, list items (content indent),
  lazy paragraph continuation, fenced code (``` / ~~~, an unclosed fence runs to the
  end of its container), indented code (4+ columns, not as paragraph continuation),
  ATX headings, thematic breaks and HTML blocks (types 1-7; a line opening with
  '<!--' is a type 2 block up to the line holding '-->', that whole line included).
  Fenced code, indented code and HTML blocks hold nothing; inline HTML inside a
  paragraph does not hide its surroundings.
* Comments (every rule here is a row of docs/link-parity.md, which gives its source):
  - <!-- ... --> anywhere holds nothing, on one line or many.
  - %%...%% opened and closed within one line hides nothing: links and tags count.
  - %%...%% spanning lines hides links (and tasks), but the tags inside still count.
  Both are recognised outside code and HTML blocks (a code span on the same line
  shields them); whichever opens first hides the other's opener.
* Code spans (CommonMark backtick-run matching within one paragraph/heading) hold
  nothing.  Backslash escapes (\\[, \\!, \\#, ...) make the next character literal.
* Wikilinks: [[inner]] on one line, inner not blank, closed by the first ']]';
  '![[...]]' is an embed.  inner = target#subpath|alias (a table's '\\|' also splits);
  the target is the text before the first '#' of the part before the alias, with
  surrounding blanks trimmed (Obsidian resolves ![[a.png | 100]] to a.png).
  A wikilink that opens before a backtick run shields it from code-span matching.
* Markdown links: CommonMark inline links [text](dest "title") / [text](<dest>),
  with the CommonMark bracket rules (no link inside a link text; images may be).
  '![alt](dest)' is an embed.  Internal only: dest not empty, no URL scheme
  (/^[A-Za-z0-9+.-]{2,}:/) and not starting with '//'.  The target is the dest
  (backslash escapes removed) before the first '#', percent-decoded; '(#Heading)'
  is a same-note link.  Reference links count like inline ones: [text][label],
  [label][] and [label] (shortcut) whose label (case and runs of blanks ignored)
  a definition line '[label]: dest "title"' at the start of a paragraph defines,
  anywhere in the note (the first definition of a label wins); a definition is not
  a link itself, and '[^x]:' is a footnote, not a definition.
* Autolinks (<https://x.org>, <mailto:a@b.c>, <name@example.com>, CommonMark's URI and
  email forms) are never links: Obsidian opens them as a URL or an address.  They bind
  tighter than brackets, so a '[' or ']' inside one opens or closes no markdown link
  ('[x <https://y/](Note.md)>' links nowhere); a wikilink inside one still counts, as
  the wikilink scan does not look at markdown inlines.
* Tags: '#' at the start of a line or after whitespace, then one or more tag
  characters: ASCII letters, digits, '_', '-', '/', or any non-ASCII character except
  whitespace and the Unicode punctuation blocks U+2000-206F and U+2E00-2E7F (as
  Obsidian's tag pattern excludes them); not all digits.  Text inside wikilinks and
  markdown-link destinations is not scanned for tags.
* Resolution: Obsidian's getLinkpathDest, see resolve() below; an empty target is a
  same-note link and always resolves to the note itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
from urllib.parse import unquote

# --------------------------------------------------------------------------------------
# Vault walk
# --------------------------------------------------------------------------------------

SKIP_DIRS = {".git", ".trash", ".otc-sync"}
SKIP_NAMES = {".DS_Store", "Thumbs.db"}
SKIP_PATHS = {".obsidian/workspace.json", ".obsidian/workspace-mobile.json"}


def list_files(root: str) -> list[str]:
    """Every considered file, vault-relative with '/', sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        keep = []
        for d in dirnames:
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if (not rel_dir and d in SKIP_DIRS) or rel == ".obsidian/cache":
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if f in SKIP_NAMES or rel in SKIP_PATHS or rel == ".obsidian/cache":
                continue
            out.append(rel)
    return sorted(out)


# --------------------------------------------------------------------------------------
# A small YAML reader (enough for frontmatter; raises YamlError on invalid input)
# --------------------------------------------------------------------------------------


class YamlError(Exception):
    pass


class Str(str):
    """A string scalar (quoted, plain or block); plain non-strings are kept as text too."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank_or_comment(line: str) -> bool:
    s = line.strip(" \t")
    return s == "" or s.startswith("#")


def _rest_ok(rest: str) -> bool:
    """After a complete value: only blanks or a comment may follow on the line."""
    s = rest.lstrip(" \t")
    return s == "" or (s.startswith("#") and (len(rest) > len(s)))


def _hashable(k):
    try:
        hash(k)
        return k
    except TypeError:
        return json.dumps(k, sort_keys=True, default=str)


class MiniYaml:
    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.n = len(self.lines)

    # -- entry point ------------------------------------------------------------
    def load(self):
        i = self._skip(0)
        if i >= self.n:
            return None
        if self.lines[i].startswith("\t"):
            raise YamlError("tab indentation")
        value, i = self._block_node(i, -1)
        i = self._skip(i)
        if i < self.n:
            raise YamlError(f"unexpected content on line {i + 1}")
        return value

    def _skip(self, i: int) -> int:
        while i < self.n and _blank_or_comment(self.lines[i]):
            i += 1
        return i

    # -- block structure --------------------------------------------------------
    @staticmethod
    def _is_seq(c: str) -> bool:
        return c == "-" or c.startswith("- ") or c.startswith("-\t")

    def _block_node(self, i: int, parent: int):
        line = self.lines[i]
        ind = _indent(line)
        c = line[ind:]
        if c.startswith("\t"):
            raise YamlError("tab indentation")
        if self._is_seq(c):
            return self._block_seq(i, ind)
        if self._split_key(c) is not None:
            return self._block_map(i, ind)
        return self._inline_value(i, ind, parent)

    def _block_seq(self, i: int, n: int):
        items = []
        while True:
            i = self._skip(i)
            if i >= self.n:
                break
            line = self.lines[i]
            ind = _indent(line)
            if ind < n:
                break
            if ind > n:
                raise YamlError(f"bad indentation of a sequence entry, line {i + 1}")
            c = line[n:]
            if not self._is_seq(c):
                break
            rest = c[1:]
            if _blank_or_comment(rest):
                j = self._skip(i + 1)
                if j < self.n and _indent(self.lines[j]) > n:
                    val, i = self._block_node(j, n)
                else:
                    val, i = None, i + 1
            else:
                stripped = rest.lstrip(" \t")
                col = n + 1 + (len(rest) - len(stripped))
                self.lines[i] = " " * col + stripped  # re-read the entry as its own node
                val, i = self._block_node(i, n)
            items.append(val)
        return items, i

    def _block_map(self, i: int, n: int):
        out: dict = {}
        while True:
            i = self._skip(i)
            if i >= self.n:
                break
            line = self.lines[i]
            ind = _indent(line)
            if ind < n:
                break
            if ind > n:
                raise YamlError(f"bad indentation of a mapping entry, line {i + 1}")
            c = line[n:]
            kv = self._split_key(c)
            if kv is None:
                raise YamlError(f"expected a mapping key, line {i + 1}")
            key, rest = kv
            hk = _hashable(key)
            if hk in out:
                raise YamlError(f"duplicated mapping key {key!r}")
            stripped = rest.lstrip(" \t")
            if _blank_or_comment(rest):
                j = self._skip(i + 1)
                if j < self.n and (
                    _indent(self.lines[j]) > n
                    or (_indent(self.lines[j]) == n and self._is_seq(self.lines[j][n:]))
                ):
                    if _indent(self.lines[j]) == n:
                        val, i = self._block_seq(j, n)
                    else:
                        val, i = self._block_node(j, n)
                else:
                    val, i = None, i + 1
            else:
                col = n + len(c) - len(stripped)
                val, i = self._inline_value(i, col, n)
            out[hk] = val
        return out, i

    def _split_key(self, c: str):
        """(key, rest after ':') if the line content is 'key: ...', else None."""
        if not c:
            return None
        if c[0] not in "\"'":
            if c[0] in "#&*!|>%@`[]{},":
                return None  # comments, node properties and flow keys: not a plain key
            if c[0] in "-?:" and (len(c) == 1 or c[1] in " \t"):
                return None
        if c[0] in "\"'":
            try:
                key, end = self._quoted_one_line(c, 0)
            except YamlError:
                return None
            rest = c[end:].lstrip(" \t")
            if rest.startswith(":") and (len(rest) == 1 or rest[1] in " \t"):
                return key, rest[1:]
            return None
        m = re.search(r":(?=[ \t]|$)", c)
        if not m:
            return None
        key = c[: m.start()]
        if re.search(r"[ \t]#", key):
            return None  # the colon is inside a comment
        return Str(key.rstrip(" \t")), c[m.end():]

    @staticmethod
    def _quoted_one_line(s: str, k: int):
        q = s[k]
        j = k + 1
        buf = []
        while j < len(s):
            ch = s[j]
            if q == "'" and ch == "'":
                if s[j + 1: j + 2] == "'":
                    buf.append("'")
                    j += 2
                    continue
                return Str("".join(buf)), j + 1
            if q == '"' and ch == "\\":
                buf.append(s[j + 1: j + 2])
                j += 2
                continue
            if q == '"' and ch == '"':
                return Str("".join(buf)), j + 1
            buf.append(ch)
            j += 1
        raise YamlError("unterminated quoted key")

    # -- values that start on a line (after 'key: ', '- ' or at a node's column) ---
    def _inline_value(self, i: int, col: int, parent: int):
        text = self.lines[i][col:]
        # node properties: an anchor and/or a tag before the value
        while text[:1] in ("&", "!"):
            m = re.match(r"[&!][^ \t]*[ \t]*", text)
            text = text[m.end():]
            col = len(self.lines[i]) - len(text)
            if _blank_or_comment(text):
                j = self._skip(i + 1)
                if j < self.n and _indent(self.lines[j]) > parent:
                    return self._block_node(j, parent)
                return None, i + 1
        if not text:
            return None, i + 1
        ch = text[0]
        if ch == "*":  # alias
            if not _rest_ok(re.sub(r"^\*[^ \t]+", "", text)):
                raise YamlError("junk after alias")
            return None, i + 1
        if ch in "\"'":
            return self._quoted(i, col, parent)
        if ch in "[{":
            return self._flow(i, col)
        if ch in "|>":
            return self._block_scalar(i, text, parent)
        if ch in "@`":
            raise YamlError("reserved indicator")
        if self._is_seq(text):
            raise YamlError(f"sequence entry not allowed here, line {i + 1}")
        return self._plain(i, text, parent)

    def _plain(self, i: int, text: str, parent: int):
        def segment(t: str, lineno: int) -> str:
            m = re.search(r"[ \t]#", t)
            if m:
                t = t[: m.start()]
            t = t.strip(" \t")
            if re.search(r":([ \t]|$)", t):
                raise YamlError(f"mapping values are not allowed here, line {lineno + 1}")
            return t

        parts = [segment(text, i)]
        ended = bool(re.search(r"[ \t]#", text))  # a comment ends a plain scalar
        j = i + 1
        pending_blank = 0
        while not ended and j < self.n:
            line = self.lines[j]
            if line.strip(" \t") == "":
                pending_blank += 1
                j += 1
                continue
            if _indent(line) <= parent or line.lstrip(" \t").startswith("#"):
                break
            parts.append("\n" * pending_blank if pending_blank else " ")
            pending_blank = 0
            parts.append(segment(line, j))
            ended = bool(re.search(r"[ \t]#", line))
            i = j
            j += 1
        return Str("".join(parts)), i + 1

    def _quoted(self, i: int, col: int, parent: int):
        """A single- or double-quoted scalar, possibly spanning lines (folded)."""
        q = self.lines[i][col]
        buf: list[str] = []
        li, k = i, col + 1
        while True:
            line = self.lines[li]
            while k < len(line):
                ch = line[k]
                if q == "'" and ch == "'":
                    if line[k + 1: k + 2] == "'":
                        buf.append("'")
                        k += 2
                        continue
                    return self._after_quoted(buf, li, line[k + 1:])
                if q == '"' and ch == "\\":
                    nxt = line[k + 1: k + 2]
                    if nxt == "":  # escaped line break: join without a space
                        buf.append("\x01")
                        k += 1
                        continue
                    buf.append({"n": "\n", "t": "\t", "0": "\0"}.get(nxt, nxt))
                    k += 2
                    continue
                if q == '"' and ch == '"':
                    return self._after_quoted(buf, li, line[k + 1:])
                buf.append(ch)
                k += 1
            li += 1
            if li >= self.n:
                raise YamlError("unterminated quoted scalar")
            nxt_line = self.lines[li]
            if nxt_line.strip(" \t") and _indent(nxt_line) <= parent and parent >= 0:
                raise YamlError("bad indentation in quoted scalar")
            # fold the line break: trailing blanks dropped, empty lines become newlines
            if buf and buf[-1] == "\x01":
                buf.pop()
            else:
                while buf and buf[-1] in " \t":
                    buf.pop()
                buf.append("\n" if nxt_line.strip(" \t") == "" else " ")
            k = len(nxt_line) - len(nxt_line.lstrip(" \t"))

    def _after_quoted(self, buf, li, rest):
        if not _rest_ok(rest):
            raise YamlError(f"unexpected text after a quoted scalar, line {li + 1}")
        return Str("".join(buf).replace("\x01", "")), li + 1

    def _block_scalar(self, i: int, header: str, parent: int):
        m = re.match(r"([|>])([1-9+-]{0,2})", header)
        if not m or not _rest_ok(header[m.end():]):
            raise YamlError("bad block scalar header")
        style, ind_ind = m.group(1), re.sub(r"[+-]", "", m.group(2))
        j = i + 1
        content_indent = None
        if ind_ind:
            content_indent = max(parent, 0) + int(ind_ind)
        lines = []
        while j < self.n:
            line = self.lines[j]
            if line.strip(" ") == "":
                lines.append("")
                j += 1
                continue
            ind = _indent(line)
            if content_indent is None:
                if ind <= parent:
                    break
                content_indent = ind
            if ind < content_indent:
                break
            lines.append(line[content_indent:])
            j += 1
        while lines and lines[-1] == "":
            lines.pop()
            j -= 1
        # j now points after the last content line (trailing blank lines left unread)
        chomp = m.group(2)
        tail = "" if "-" in chomp or not lines else "\n"
        if style == "|":
            return Str("\n".join(lines) + tail), max(j, i + 1)
        out = ""
        prev = None  # folding: a single line break becomes a space, blank lines stay
        for ln in lines:
            if prev is None:
                out = ln
            elif ln == "":
                out += "\n"
            elif prev == "" or ln.startswith(" ") or prev.startswith(" "):
                out += ("" if prev == "" else "\n") + ln
            else:
                out += " " + ln
            prev = ln
        return Str(out + tail), max(j, i + 1)

    # -- flow collections ---------------------------------------------------------
    def _flow(self, i: int, col: int):
        # The flow text runs on until its closing bracket, possibly over lines.
        s = "\n".join([self.lines[i][col:]] + self.lines[i + 1:])
        value, k = _FlowParser(s).parse()
        consumed = s[:k].count("\n")
        end_line = i + consumed
        rest = s[k:].split("\n", 1)[0]
        if not _rest_ok(rest):
            raise YamlError(f"unexpected text after a flow collection, line {end_line + 1}")
        return value, end_line + 1


class _FlowParser:
    def __init__(self, s: str):
        self.s = s
        self.k = 0

    def parse(self):
        v = self.node()
        return v, self.k

    def ws(self):
        s = self.s
        while self.k < len(s):
            ch = s[self.k]
            if ch in " \t\n":
                self.k += 1
            elif ch == "#" and (self.k == 0 or s[self.k - 1] in " \t\n"):
                while self.k < len(s) and s[self.k] != "\n":
                    self.k += 1
            else:
                break

    def node(self):
        self.ws()
        if self.k >= len(self.s):
            raise YamlError("unterminated flow collection")
        ch = self.s[self.k]
        if ch == "[":
            return self.seq()
        if ch == "{":
            return self.mapping()
        if ch in "\"'":
            return self.quoted()
        return self.plain()

    def seq(self):
        self.k += 1
        out = []
        while True:
            self.ws()
            if self.k >= len(self.s):
                raise YamlError("unterminated flow sequence")
            if self.s[self.k] == "]":
                self.k += 1
                return out
            item = self.node()
            self.ws()
            if self.s[self.k: self.k + 1] == ":":  # single-pair mapping
                self.k += 1
                self.ws()
                val = None if self.s[self.k: self.k + 1] in (",", "]") else self.node()
                item = {_hashable(item): val}
                self.ws()
            out.append(item)
            if self.s[self.k: self.k + 1] == ",":
                self.k += 1
            elif self.s[self.k: self.k + 1] != "]":
                raise YamlError("expected ',' or ']' in a flow sequence")

    def mapping(self):
        self.k += 1
        out: dict = {}
        while True:
            self.ws()
            if self.k >= len(self.s):
                raise YamlError("unterminated flow mapping")
            if self.s[self.k] == "}":
                self.k += 1
                return out
            key = self.node()
            self.ws()
            val = None
            if self.s[self.k: self.k + 1] == ":":
                self.k += 1
                self.ws()
                if self.s[self.k: self.k + 1] not in (",", "}"):
                    val = self.node()
                self.ws()
            hk = _hashable(key)
            if hk in out:
                raise YamlError("duplicated mapping key")
            out[hk] = val
            if self.s[self.k: self.k + 1] == ",":
                self.k += 1
            elif self.s[self.k: self.k + 1] != "}":
                raise YamlError("expected ',' or '}' in a flow mapping")

    def quoted(self):
        s, q = self.s, self.s[self.k]
        j = self.k + 1
        buf = []
        while j < len(s):
            ch = s[j]
            if q == "'" and ch == "'":
                if s[j + 1: j + 2] == "'":
                    buf.append("'")
                    j += 2
                    continue
                self.k = j + 1
                return Str("".join(buf))
            if q == '"' and ch == "\\":
                buf.append(s[j + 1: j + 2])
                j += 2
                continue
            if q == '"' and ch == '"':
                self.k = j + 1
                return Str("".join(buf))
            buf.append(" " if ch == "\n" else ch)
            j += 1
        raise YamlError("unterminated quoted scalar")

    def plain(self):
        s = self.s
        start = self.k
        j = self.k
        while j < len(s):
            ch = s[j]
            if ch in ",[]{}":
                break
            if ch == ":" and (j + 1 >= len(s) or s[j + 1] in " \t\n,[]{}"):
                break
            if ch == "#" and j > start and s[j - 1] in " \t\n":
                break
            j += 1
        text = " ".join(s[start:j].split())
        if not text:
            raise YamlError("empty flow entry")
        self.k = j
        return Str(text)


# --------------------------------------------------------------------------------------
# Frontmatter
# --------------------------------------------------------------------------------------

WIKILINK_IN_STRING = re.compile(r"\[\[([^\n]*?)\]\]")
TAGS_KEY = re.compile(r"^tags?$", re.IGNORECASE)


def split_frontmatter(lines: list[str]):
    """(yaml_text or None, index of the first body line)."""
    if not lines or lines[0].rstrip(" \t") != "---":
        return None, 0
    for i in range(1, len(lines)):
        if lines[i].rstrip(" \t") in ("---", "..."):
            return "\n".join(lines[1:i]), i + 1
    return None, 0


def _strings(value):
    """Every string value inside a parsed YAML value (not the mapping keys)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def frontmatter_items(yaml_text: str):
    """(property link targets, tag names) from the frontmatter text."""
    try:
        data = MiniYaml(yaml_text).load()
    except (YamlError, RecursionError, IndexError):
        return [], []
    if not isinstance(data, dict):
        return [], []
    links = []
    for s in _strings(data):
        for m in WIKILINK_IN_STRING.finditer(s):
            if m.group(1).strip():
                links.append(wikilink_target(m.group(1)))
    tags = []
    for key, value in data.items():
        if not isinstance(key, str) or not TAGS_KEY.match(key):
            continue
        if isinstance(value, list):
            items = [v for v in value if isinstance(v, str)]
        elif isinstance(value, str):
            items = re.split(r"[,\s]+", value)
        else:
            items = []
        for item in items:
            item = item.strip()
            if item.startswith("#"):
                item = item[1:]
            if item:
                tags.append(item)
    return links, tags


# --------------------------------------------------------------------------------------
# Body: CommonMark block structure -> text groups with code and comments removed
# --------------------------------------------------------------------------------------

HIDDEN = "\x00"  # stands in for hidden characters (keeps offsets, is never whitespace)

FENCE_RE = re.compile(r"(`{3,}|~{3,})(.*)$")
ATX_RE = re.compile(r"#{1,6}(?:[ \t]|$)")
THEMATIC_RE = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
BULLET_RE = re.compile(r"([-+*])(?=[ \t]|$)")
ORDERED_RE = re.compile(r"([0-9]{1,9})([.)])(?=[ \t]|$)")
HTML6_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|"
    "noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|"
    "thead|title|tr|track|ul"
)
HTML_START = [
    (2, re.compile(r"<!--"), re.compile(r"-->")),
    (1, re.compile(r"<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I), re.compile(r"</(?:script|pre|style|textarea)>", re.I)),
    (3, re.compile(r"<\?"), re.compile(r"\?>")),
    (4, re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (5, re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (6, re.compile(rf"</?(?:{HTML6_TAGS})(?:[ \t>]|/>|$)", re.I), None),
]
_ATTR = r"(?:[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t]*=[ \t]*(?:[^ \t\"'=<>`]+|'[^']*'|\"[^\"]*\"))?)"
HTML7_RE = re.compile(rf"(?:<[A-Za-z][A-Za-z0-9-]*{_ATTR}*[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>)[ \t]*$")


def _ind(s: str, p: int = 0) -> int:
    q = p
    while q < len(s) and s[q] == " ":
        q += 1
    return q - p


def _html_start(s: str, can_interrupt_para: bool):
    """(type, end regex or None) when s (no indentation) opens a CommonMark HTML block."""
    for kind, start, end in HTML_START:
        if start.match(s):
            return kind, end
    if not can_interrupt_para and HTML7_RE.match(s) and not re.match(r"</?(?:script|style|pre|textarea)\b", s, re.I):
        return 7, None
    return None


def _list_marker(s: str, p: int):
    """(marker length, ordered, start number) for a list marker at s[p], else None."""
    m = BULLET_RE.match(s, p)
    if m:
        return 1, False, None
    m = ORDERED_RE.match(s, p)
    if m:
        return len(m.group(0)), True, int(m.group(1))
    return None


def _interrupts_paragraph(s: str) -> bool:
    """Whether a line (container prefixes consumed) would start a block that ends a paragraph."""
    i = _ind(s)
    if i >= 4:
        return False
    t = s[i:]
    if not t:
        return True
    if t.startswith(">") or FENCE_RE.match(t) and not (t[0] == "`" and "`" in FENCE_RE.match(t).group(2)):
        return True
    if ATX_RE.match(t) or THEMATIC_RE.match(t):
        return True
    lm = _list_marker(t, 0)
    if lm:
        length, ordered, start = lm
        if t[length:].strip() and (not ordered or start == 1):
            return True
    if _html_start(t, True):
        return True
    return False


def _code_spans(text: str) -> list[tuple[int, int]]:
    """CommonMark code spans: (start, end) of each matched backtick pair, end exclusive.
    Left to right: a wikilink that opens before a backtick run shields it."""
    spans = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[" and text.startswith("[[", i):
            close = text.find("]]", i + 2)
            nl = text.find("\n", i + 2)
            if close > i + 2 and (nl < 0 or close < nl) and text[i + 2: close].strip():
                i = close + 2
                continue
        if ch != "`":
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        run = j - i
        k = j
        found = None
        while k < n:
            if text[k] == "`":
                m = k
                while m < n and text[m] == "`":
                    m += 1
                if m - k == run:
                    found = m
                    break
                k = m
            else:
                k += 1
        if found is None:
            i = j  # an unmatched run is literal text
        else:
            spans.append((i, found))
            i = found
    return spans


class BodyScanner:
    """Walks the body lines once; produces inline text groups (paragraphs, headings)
    with fenced/indented code, HTML blocks and comments removed."""

    def __init__(self, lines: list[str]):
        self.lines = [ln.expandtabs(4) for ln in lines]
        self.groups: list[list[str]] = []  # each group: the content lines of one block
        self.cur: list[str] | None = None  # current paragraph group
        self.comment_end: str | None = None  # '%%' or '-->' while inside a comment
        self.paragraphs: set[int] = set()  # indexes of the groups that are paragraphs
        # The text of each %%comment%% spanning lines: its tags count, nothing else does.
        self.tag_only: list[list[str]] = []

    # -- comments -----------------------------------------------------------------
    def _hide_comments(self, text: str, start_inside: bool) -> str:
        """Hide comment text on one line; updates self.comment_end for a comment
        left open at the end of the line."""
        out = list(text)
        i = 0
        n = len(text)
        if start_inside:
            j = text.find(self.comment_end)
            if j < 0:
                if self.comment_end == "%%":
                    self.tag_only[-1].append(text)
                return HIDDEN * n
            end = j + len(self.comment_end)
            if self.comment_end == "%%":
                self.tag_only[-1].append(text[:end])
            out[:end] = HIDDEN * end
            self.comment_end = None
            i = end
        code = [(a, b) for a, b in _code_spans(text[i:])]
        code = [(a + i, b + i) for a, b in code]
        ci = 0
        while i < n:
            while ci < len(code) and code[ci][1] <= i:
                ci += 1
            if ci < len(code) and code[ci][0] <= i < code[ci][1]:
                i = code[ci][1]
                continue
            if text[i] == "\\":
                i += 2
                continue
            if text.startswith("%%", i) or text.startswith("<!--", i):
                closer = "%%" if text[i] == "%" else "-->"
                j = text.find(closer, i + (2 if closer == "%%" else 4))
                if j < 0:
                    out[i:] = HIDDEN * (n - i)
                    self.comment_end = closer
                    if closer == "%%":
                        self.tag_only.append([text[i:]])
                    return "".join(out)
                end = j + len(closer)
                if closer == "-->":
                    out[i:end] = HIDDEN * (end - i)
                # A %%comment%% closed on its own line hides nothing (Obsidian indexes it).
                i = end
                continue
            i += 1
        return "".join(out)

    # -- groups -------------------------------------------------------------------
    def _text(self, content: str, para: bool):
        """Add a content line: to the open paragraph (para=True) or as its own group."""
        inside = self.comment_end is not None
        content = self._hide_comments(content, inside)
        if para:
            if self.cur is None:
                self.cur = []
                self.paragraphs.add(len(self.groups))
                self.groups.append(self.cur)
            self.cur.append(content)
        else:
            self.cur = None
            self.groups.append([content])

    def _close_para(self):
        self.cur = None

    # -- the block walk -------------------------------------------------------------
    def run(self) -> list[str]:
        containers: list[dict] = []  # {'t': 'bq'} or {'t': 'li', 'w': width, ...}
        leaf = None  # None, 'para', ('fence', ch, len), 'icode', ('html', end_re)
        for line in self.lines:
            # Inside a multi-line comment nothing is structure until the comment ends.
            if self.comment_end is not None:
                j = line.find(self.comment_end)
                if j < 0:
                    if self.comment_end == "%%":
                        self.tag_only[-1].append(line)
                    continue
                rest = self._hide_comments(line, True)
                if rest.strip(HIDDEN + " "):
                    self.groups.append([rest])  # text after the closing marker
                continue

            # 1. match the open containers
            pos = 0
            matched = 0
            for c in containers:
                if c["t"] == "bq":
                    i = _ind(line, pos)
                    if i <= 3 and line[pos + i: pos + i + 1] == ">":
                        pos += i + 1
                        if line[pos: pos + 1] == " ":
                            pos += 1
                        matched += 1
                        continue
                    break
                rest = line[pos:]
                if rest.strip() == "":
                    if c.get("blank_start") and not c.get("content"):
                        break  # an item may begin with at most one blank line
                    matched += 1
                    continue
                if _ind(rest) >= c["w"]:
                    pos += c["w"]
                    matched += 1
                    continue
                break
            rest = line[pos:]
            all_matched = matched == len(containers)

            # 2. continue an open code/html leaf
            if all_matched and isinstance(leaf, tuple) and leaf[0] == "fence":
                i = _ind(rest)
                t = rest[i:]
                m = re.match(r"(`+|~+)[ \t]*$", t)
                if i <= 3 and m and m.group(1)[0] == leaf[1] and len(m.group(1)) >= leaf[2]:
                    leaf = None
                continue
            if all_matched and leaf == "icode":
                if rest.strip() == "" or _ind(rest) >= 4:
                    continue
                leaf = None
            if all_matched and isinstance(leaf, tuple) and leaf[0] == "html":
                end_re = leaf[1]
                if end_re is None:
                    if rest.strip() == "":
                        leaf = None
                    continue
                if end_re.search(rest):
                    leaf = None
                continue

            # 3. lazy paragraph continuation
            if not all_matched and leaf == "para" and rest.strip() and not _interrupts_paragraph(rest):
                self._text(rest, True)
                continue
            if not all_matched:
                del containers[matched:]
                leaf = None
                self._close_para()

            # 4. open new containers
            while True:
                i = _ind(rest)
                if i >= 4:
                    break
                p = pos + i
                if line[p: p + 1] == ">":
                    containers.append({"t": "bq"})
                    leaf = None
                    self._close_para()
                    pos = p + 1
                    if line[pos: pos + 1] == " ":
                        pos += 1
                    rest = line[pos:]
                    continue
                lm = _list_marker(line, p)
                if lm and not THEMATIC_RE.match(line[p:]):
                    length, ordered, start = lm
                    after = line[p + length:]
                    blank = after.strip() == ""
                    if leaf == "para" and (blank or (ordered and start != 1)):
                        break
                    sp = _ind(after)
                    if blank:
                        sp = 1
                    elif sp >= 5:
                        sp = 1
                    width = (p - pos) + length + sp
                    for c in containers:
                        if c["t"] == "li":
                            c["content"] = True
                    containers.append({"t": "li", "w": width, "blank_start": blank, "content": False})
                    leaf = None
                    self._close_para()
                    pos = min(p + length + sp, len(line))
                    rest = line[pos:]
                    if blank:
                        break
                    continue
                break
            if rest.strip():
                for c in containers:
                    if c["t"] == "li":
                        c["content"] = True

            # 5. the leaf block
            if rest.strip() == "":
                leaf = None
                self._close_para()
                continue
            i = _ind(rest)
            if i >= 4:
                if leaf == "para":
                    self._text(rest, True)
                else:
                    leaf = "icode"
                continue
            t = rest[i:]
            m = FENCE_RE.match(t)
            if m and not (t[0] == "`" and "`" in m.group(2)):
                leaf = ("fence", m.group(1)[0], len(m.group(1)))
                self._close_para()
                continue
            if ATX_RE.match(t):
                leaf = None
                self._text(t, False)
                continue
            if THEMATIC_RE.match(t):
                leaf = None
                self._close_para()
                continue
            hs = _html_start(t, leaf != "para")
            if hs:
                kind, end_re = hs
                self._close_para()
                leaf = ("html", end_re)
                if end_re is not None and end_re.search(t[2:] if kind == 2 else t[1:]):
                    leaf = None
                continue
            if leaf != "para":
                self._close_para()
            leaf = "para"
            self._text(rest, True)  # a comment left open here keeps the block state
        return ["\n".join(g) for g in self.groups]


# --------------------------------------------------------------------------------------
# Inline: links, embeds and tags in one text group
# --------------------------------------------------------------------------------------

ASCII_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
SCHEME_RE = re.compile(r"^[A-Za-z0-9+.\-]{2,}:")
# CommonMark autolinks: an absolute URI, or an email address, between '<' and '>'.
AUTOLINK_RE = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\x00-\x20<>]*"
    r"|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*)>"
)


def wikilink_target(inner: str) -> str:
    bar = inner.find("|")
    link = inner if bar < 0 else inner[:bar]
    if bar >= 0 and link.endswith("\\"):
        link = link[:-1]  # '\|' in a table
    return link.split("#", 1)[0].strip()  # Obsidian ignores blanks: ![[a.png | 100]]


def markdown_target(dest: str) -> str | None:
    """The internal target of a markdown link dest, or None when it is not internal."""
    if dest == "" or dest.startswith("//") or SCHEME_RE.match(dest):
        return None
    dest = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", dest)
    return unquote(dest.split("#", 1)[0])


def _link_tail(s: str, j: int):
    """Parse '(dest "title")' at s[j]; return (dest, end) or None (CommonMark inline link)."""
    n = len(s)
    if j >= n or s[j] != "(":
        return None
    k = j + 1

    def skip_ws(k):
        nl = 0
        while k < n and s[k] in " \t\n":
            if s[k] == "\n":
                nl += 1
                if nl > 1:
                    return None
            k += 1
        return k

    k = skip_ws(k)
    if k is None:
        return None
    if k < n and s[k] == "<":
        e = k + 1
        while e < n and s[e] not in "<>\n":
            e += 2 if s[e] == "\\" else 1
        if e >= n or s[e] != ">":
            return None
        dest = s[k + 1: e]
        k = e + 1
    else:
        start = k
        depth = 0
        while k < n:
            ch = s[k]
            if ch == "\\" and k + 1 < n and s[k + 1] in ASCII_PUNCT:
                k += 2
                continue
            if ch in " \t\n" or ord(ch) < 0x20:
                break
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            k += 1
        if depth != 0:
            return None
        dest = s[start:k]
    before_title = k
    k2 = skip_ws(k)
    if k2 is None:
        return None
    k = k2
    if k < n and s[k] in "\"'(" and k > before_title:
        close = ")" if s[k] == "(" else s[k]
        e = k + 1
        while e < n and s[e] != close:
            if s[e] == "\\":
                e += 1
            elif close == ")" and s[e] == "(":
                return None
            e += 1
        if e >= n:
            return None
        k = skip_ws(e + 1)
        if k is None:
            return None
    if k < n and s[k] == ")":
        return dest, k + 1
    return None


def _reference_tail(s: str, text_start: int, close: int, defs: dict[str, str]):
    """A reference link closing at s[close] == ']': full [text][label], collapsed
    [text][] or shortcut [text]; (dest, end) when its label is defined, else None."""
    j = close + 1
    if s.startswith("[]", j):
        key = label_key(s[text_start:close])
        return (defs[key], j + 2) if key in defs else None
    if j < len(s) and s[j] == "[":
        e = s.find("]", j + 1)
        if e > j + 1 and "[" not in s[j + 1: e]:
            key = label_key(s[j + 1: e])
            return (defs[key], e + 1) if key in defs else None
    key = label_key(s[text_start:close])
    return (defs[key], j) if key in defs else None


def is_tag_char(ch: str) -> bool:
    o = ord(ch)
    if o < 128:
        return ch.isalnum() or ch in "_-/"
    if ch.isspace() or 0x2000 <= o <= 0x206F or 0x2E00 <= o <= 0x2E7F:
        return False
    return True


# A link reference definition on one line: [label]: dest, then an optional title.
DEFINITION_RE = re.compile(
    r"[ ]{0,3}\[(?!\^)((?:[^\[\]\\]|\\.){1,999})\]:[ \t]*(<[^<>\n]*>|[^ \t<][^ \t]*)"
    r"(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?[ \t]*$"
)


def label_key(label: str) -> str:
    """A link label as CommonMark matches it: case folded, runs of blanks as one space."""
    return " ".join(label.split()).casefold()


def take_definitions(group: str, defs: dict[str, str]) -> str:
    """Remove the definition lines opening a paragraph, recording each label's dest
    (the first definition of a label wins)."""
    lines = group.split("\n")
    k = 0
    while k < len(lines) and (m := DEFINITION_RE.fullmatch(lines[k])) and label_key(m.group(1)):
        dest = m.group(2)
        if dest.startswith("<"):
            dest = dest[1:-1]
        defs.setdefault(label_key(m.group(1)), dest)
        k += 1
    return "\n".join(lines[k:])


def scan_inline(text: str, defs: dict[str, str] | None = None):
    """[(kind, target)] with kind 'body'/'embed' in order, and [tag names]. `defs` holds
    the note's link reference definitions (label key -> dest)."""
    defs = defs or {}
    chars = list(text)
    for a, b in _code_spans(text):
        for k in range(a, b):
            if chars[k] != "\n":
                chars[k] = HIDDEN
    s = "".join(chars)
    n = len(s)
    found: list[tuple[int, str, str]] = []  # (offset, kind, target)
    no_tags = bytearray(n)  # 1 where tags are not looked for
    stack: list[list] = []  # [offset, is_image, active]
    autolink_end = 0  # brackets before this offset are inside an autolink
    i = 0
    while i < n:
        ch = s[i]
        if i >= autolink_end:
            if ch == "\\" and i + 1 < n and s[i + 1] in ASCII_PUNCT:
                i += 2
                continue
            if ch == "<" and (m := AUTOLINK_RE.match(s, i)):
                autolink_end = m.end()
        if s.startswith("[[", i):
            close = s.find("]]", i + 2)
            nl = s.find("\n", i + 2)
            if close >= 0 and (nl < 0 or close < nl) and s[i + 2: close].strip():
                embed = i > 0 and s[i - 1] == "!" and not (i > 1 and s[i - 2] == "\\")
                found.append((i, "embed" if embed else "body", wikilink_target(s[i + 2: close])))
                no_tags[i: close + 2] = b"\x01" * (close + 2 - i)
                i = close + 2
                continue
        if i < autolink_end:
            i += 1
            continue
        if ch == "!" and s[i + 1: i + 2] == "[" and not s.startswith("[[", i + 1):
            stack.append([i, True, True])
            i += 2
            continue
        if ch == "[":
            stack.append([i, False, True])
            i += 1
            continue
        if ch == "]" and stack:
            opener = stack.pop()
            if opener[2]:
                tail = _link_tail(s, i + 1)
                if tail is None and defs:
                    tail = _reference_tail(s, opener[0] + (2 if opener[1] else 1), i, defs)
                if tail is not None:
                    dest, end = tail
                    target = markdown_target(dest)
                    if target is not None:
                        found.append((opener[0], "embed" if opener[1] else "body", target))
                    no_tags[i: end] = b"\x01" * (end - i)
                    if not opener[1]:
                        for o in stack:
                            if not o[1]:
                                o[2] = False  # no links inside a link's text
                    i = end
                    continue
            i += 1
            continue
        i += 1
    # tags
    tags = []
    i = 0
    while i < n:
        if s[i] == "#" and not no_tags[i] and (i == 0 or s[i - 1].isspace()):
            j = i + 1
            while j < n and not no_tags[j] and is_tag_char(s[j]):
                j += 1
            name = s[i + 1: j]
            if name and not name.isdigit() and not all(c in "0123456789" for c in name):
                tags.append(name)
            i = max(j, i + 1)
            continue
        i += 1
    found.sort(key=lambda f: f[0])
    return [(k, t) for _, k, t in found], tags


# --------------------------------------------------------------------------------------
# One note
# --------------------------------------------------------------------------------------


def analyse(text: str):
    """{'links': [(kind, target)], 'tags': [name]} with kind body/embed/property."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    yaml_text, body_start = split_frontmatter(lines)
    links: list[tuple[str, str]] = []
    tags: list[str] = []
    if yaml_text is not None:
        plinks, ftags = frontmatter_items(yaml_text)
        links += [("property", t) for t in plinks]
        tags += ftags
    scanner = BodyScanner(lines[body_start:])
    groups = scanner.run()
    defs: dict[str, str] = {}
    groups = [take_definitions(g, defs) if k in scanner.paragraphs else g for k, g in enumerate(groups)]
    for group in groups:
        glinks, gtags = scan_inline(group, defs)
        links += glinks
        tags += gtags
    # Tags inside %%comments%% that span lines count; their links do not.
    for comment in scanner.tag_only:
        tags += scan_inline("\n".join(comment))[1]
    return {"links": links, "tags": tags}


# --------------------------------------------------------------------------------------
# Link resolution (Obsidian's getLinkpathDest)
# --------------------------------------------------------------------------------------


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2  # JavaScript string length


class Resolver:
    def __init__(self, files: list[str]):
        self.by_name: dict[str, list[str]] = {}
        for f in files:
            self.by_name.setdefault(f.rsplit("/", 1)[-1].lower(), []).append(f)

    def resolve(self, target: str, source: str) -> str | None:
        # 1. a same-note link
        if target == "":
            return source
        # 2. candidates by file name
        name = target.rsplit("/", 1)[-1]
        cands: list[str] = []
        n = target.lower()
        if "." in name:
            cands = self.by_name.get(name.lower(), [])
        if not cands:
            cands = self.by_name.get((name + ".md").lower(), [])
            n = (target + ".md").lower()
        if not cands:
            return None
        # 3. the source's folder
        d = _parent(source).lower()
        # 4. relative paths
        if n.startswith("./") or n.startswith("../"):
            if n.startswith("./../"):
                n = n[2:]
            if n.startswith("./"):
                n = (d + "/" if d else "") + n[2:]
                d = d + "/" if d else d
            else:
                while n.startswith("../"):
                    n = n[3:]
                    d = _parent(d)
                if d:
                    d += "/"
                n = d + n
            for c in cands:
                if c.lower() == n:
                    return c
        # 5. an exact vault path
        if n.startswith("/"):
            n = n[1:]
        for c in cands:
            if c.lower() == n:
                return c
        # 6. an absolute path that did not match
        if target.startswith("/"):
            return None
        # 7. suffix match: same-folder-prefix first, then shortest, then bytewise
        matches = [c for c in cands if c.lower().endswith(n)]
        if not matches:
            return None
        matches.sort(key=lambda c: (0 if c.lower().startswith(d) else 1, _js_len(c), c.encode()))
        return matches[0]


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def canvas_links(text: str) -> list[tuple[str, str]]:
    """A canvas's links, in node order: file nodes as embeds, then text nodes' own."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    links: list[tuple[str, str]] = []
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict):
            continue
        if node.get("type") == "file" and isinstance(node.get("file"), str) and node["file"]:
            links.append(("embed", node["file"]))
        elif node.get("type") == "text" and isinstance(node.get("text"), str):
            links += analyse(node["text"])["links"]
    return links


def count_vault(root: str) -> dict:
    files = list_files(root)
    resolver = Resolver(files)
    totals = {"notes": 0, "body_links": 0, "embeds": 0, "property_links": 0, "tags": 0, "unresolved": 0}
    per_note: dict[str, dict] = {}
    unresolved_targets: dict[str, list[str]] = {}
    resolved: dict[str, list[list[str]]] = {}
    kind_key = {"body": "body_links", "embed": "embeds", "property": "property_links"}
    for path in files:
        if path.endswith(".canvas"):
            with open(os.path.join(root, path), "rb") as fh:
                text = fh.read().decode("utf-8", errors="replace")
            for kind, target in canvas_links(text.lstrip("\ufeff")):
                totals[kind_key[kind]] += 1
                dest = resolver.resolve(target, path)
                if dest is None:
                    totals["unresolved"] += 1
                    unresolved_targets.setdefault(path, []).append(target)
                else:
                    resolved.setdefault(path, []).append([target, dest])
            continue
        if not path.endswith(".md"):
            continue
        with open(os.path.join(root, path), "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
        found = analyse(text)
        counts = {"body_links": 0, "embeds": 0, "property_links": 0, "tags": len(found["tags"]), "unresolved": 0}
        for kind, target in found["links"]:
            counts[kind_key[kind]] += 1
            dest = resolver.resolve(target, path)
            if dest is None:
                counts["unresolved"] += 1
                unresolved_targets.setdefault(path, []).append(target)
            else:
                resolved.setdefault(path, []).append([target, dest])
        per_note[path] = counts
        totals["notes"] += 1
        for k, v in counts.items():
            totals[k] += v
    return {**totals, "per_note": per_note, "unresolved_targets": unresolved_targets, "resolved": resolved}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: count_vault.py VAULT_DIR", file=sys.stderr)
        return 2
    json.dump(count_vault(argv[1]), sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
