"""The King James Bible as training text, from Debian's bible-kjv package.

`bible "gen1:1-rev22:21"` prints every chapter as a header line ("Genesis 1"), a blank line,
then verses that start with "  N " and wrap onto lines without indent. We keep the words and
punctuation of each verse, drop the book/chapter headers and the verse numbers, and return the
1,189 chapters as lists of verses.
"""
import re
import subprocess

HEADER = re.compile(r"^(?:[1-3] )?[A-Z][A-Za-z ]+ \d+$")  # "Genesis 1", "1 Kings 3", "Song of Solomon 2"
VERSE_START = re.compile(r"^  +\d+ ")


def read_kjv_chapters() -> list[list[str]]:
    text = subprocess.run(["bible", "gen1:1-rev22:21"], check=True, capture_output=True,
                          text=True).stdout
    chapters: list[list[str]] = []
    verse: list[str] = []

    def end_verse():
        if verse:
            chapters[-1].append(" ".join(verse))
            verse.clear()

    for line in text.splitlines():
        if not line.strip():
            continue
        if HEADER.match(line):
            end_verse()
            chapters.append([])
        elif VERSE_START.match(line):
            end_verse()
            verse.append(VERSE_START.sub("", line).strip())
        else:  # a verse wrapped onto the next line
            verse.append(line.strip())
    end_verse()
    if len(chapters) != 1189:
        raise RuntimeError(f"expected the 1189 chapters of the KJV, parsed {len(chapters)}")
    return chapters


if __name__ == "__main__":
    chapters = read_kjv_chapters()
    verses = [v for c in chapters for v in c]
    print(f"{len(chapters)} chapters, {len(verses)} verses, {sum(map(len, verses))} characters")
    print(chapters[0][:3])
