"""Building and reading content blocks."""

from __future__ import annotations

from typing import Iterable, List, Sequence, Union

from .values import ContentBlock, TextContent

#: What the calls that take content accept: a string (one text block), a block, or blocks.
Content = Union[str, ContentBlock, Sequence[ContentBlock]]


def text(value: str) -> TextContent:
    """A text content block."""
    return TextContent(text=value)


def blocks(content: Content) -> List[ContentBlock]:
    """``content`` as a list of blocks (a string becomes one text block)."""
    if isinstance(content, str):
        return [TextContent(text=content)]
    if isinstance(content, ContentBlock):
        return [content]
    return list(content)


def text_of(content: Union[ContentBlock, Iterable[ContentBlock], None]) -> str:
    """The text of a block, or of a list's text blocks joined (other blocks are skipped);
    ``""`` for ``None``."""
    if content is None:
        return ""
    if isinstance(content, ContentBlock):
        return content.text if isinstance(content, TextContent) else ""
    return "".join(b.text for b in content if isinstance(b, TextContent))
