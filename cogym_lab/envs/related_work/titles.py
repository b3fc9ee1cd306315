"""The one rule for matching paper titles: :func:`normalize_title`.

Two titles are the same paper title when their normalised forms are equal. The normalisation:

1. Unicode NFKC (ligatures, full-width letters and the like become plain letters);
2. lower case;
3. keep only the runs of word characters (letters, digits, underscore; Unicode-aware) and join
   them with single spaces, so punctuation, quotes, hyphens and spacing are ignored.

``"BERT: Pre-training of Deep Bidirectional Transformers"`` and
``"bert pre training of deep bidirectional transformers"`` are the same title. The search's exact
title ranking, the coverage figures of ``cogym-lab data`` and the flagging of papers the offline
search cannot find all use this rule.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalize_title"]

_WORD = re.compile(r"\w+")


def normalize_title(text: str) -> str:
    """Lower-case words of ``text`` joined by single spaces (punctuation and spacing ignored)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_WORD.findall(text))
