#!/usr/bin/env python3
"""housetex 1.0: typesets report.src into out/report.txt, writing warnings to out/report.log.

Paragraphs are separated by blank lines; lines starting with '%' are comments. Lines are
filled to WIDTH columns. A word may carry discretionary hyphens (backslash-minus), where
it can be broken across lines with a '-'. A piece that still does not fit is set anyway, and
the log records an 'Overfull \\hbox' warning, as TeX does. The exit status is 0 either way.
"""

import os

WIDTH = 60
here = os.path.dirname(os.path.abspath(__file__))
DISC = "\\-"


def paragraphs(lines):
    para, start = [], None
    for number, line in enumerate(lines, 1):
        if line.startswith("%"):
            continue
        if line.strip():
            start = start or number
            para.append((number, line))
        elif para:
            yield start, para[-1][0], " ".join(text for _, text in para).split()
            para, start = [], None
    if para:
        yield start, para[-1][0], " ".join(text for _, text in para).split()


def pieces(word, room):
    """Break ``word`` at discretionary hyphens: (first piece fitting ``room``, rest)."""
    parts = word.split(DISC)
    for k in range(len(parts) - 1, 0, -1):
        head = "".join(parts[:k]) + "-"
        if len(head) <= room:
            return head, DISC.join(parts[k:])
    return None, word


def typeset(words, first, last, log):
    out, line = [], ""
    for word in words:
        while True:
            plain = word.replace(DISC, "")
            room = WIDTH - len(line) - (1 if line else 0)
            if len(plain) <= room:
                line = f"{line} {plain}" if line else plain
                break
            head, rest = pieces(word, room)
            if head is not None:
                out.append(f"{line} {head}" if line else head)
                line, word = "", rest
                continue
            if line:
                out.append(line)
                line = ""
                continue
            out.append(plain)
            log.append(f"Overfull \\hbox ({(len(plain) - WIDTH) * 5.0:.1f}pt too wide) "
                       f"in paragraph at lines {first}--{last}")
            break
    if line:
        out.append(line)
    return out


def main():
    src = open(os.path.join(here, "report.src"), encoding="utf-8").read().split("\n")
    log = ["This is housetex, Version 1.0", "(./report.src"]
    body = []
    for first, last, words in paragraphs(src):
        body += typeset(words, first, last, log) + [""]
    os.makedirs(os.path.join(here, "out"), exist_ok=True)
    with open(os.path.join(here, "out", "report.txt"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(body))
    log += [")", f"Output written on out/report.txt ({len(body)} lines)."]
    with open(os.path.join(here, "out", "report.log"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(log) + "\n")
    print(f"Output written on out/report.txt ({len(body)} lines).")
    print("Transcript written on out/report.log.")


if __name__ == "__main__":
    main()
