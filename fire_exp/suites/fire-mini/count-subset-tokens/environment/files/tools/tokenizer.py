"""wordpiece-lite: the project's tokenizer.

Words are runs of letters and digits, every other non-space character is its own token, and
a word longer than six characters is split into pieces of at most six.

    >>> count_tokens("Unbelievable, isn't it?")
    7
"""

import re
import sys

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    tokens = []
    for tok in _TOKEN.findall(text):
        if len(tok) > 6 and tok[0].isalnum():
            tokens += [tok[:6]] + ["##" + tok[i:i + 6] for i in range(6, len(tok), 6)]
        else:
            tokens.append(tok)
    return tokens


def count_tokens(text: str) -> int:
    return len(tokenize(text))


if __name__ == "__main__":
    print(count_tokens(sys.stdin.read()))
