"""Building and reading content blocks."""

from __future__ import annotations

from typing import Iterable, List, Sequence, Union

from .acp_inject_ffi import ContentBlock, TextContent

#: What the calls that take content accept: a string (one text block) or content blocks.
Content = Union[str, ContentBlock, Sequence[ContentBlock]]


def text(value: str) -> ContentBlock:
    """A text content block."""
    return ContentBlock.TEXT(TextContent(text=value))


def blocks(content: Content) -> List[ContentBlock]:
    """``content`` as a list of blocks (a string becomes one text block)."""
    if isinstance(content, str):
        return [text(content)]
    if isinstance(content, ContentBlock):
        return [content]
    return list(content)


def text_of(content: Union[ContentBlock, Iterable[ContentBlock]]) -> str:
    """The text of a block, or of a list's text blocks joined (other blocks are skipped)."""
    if isinstance(content, ContentBlock):
        content = [content]
    return "".join(b[0].text for b in content if isinstance(b, ContentBlock.TEXT))
