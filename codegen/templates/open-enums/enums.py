# {{ preamble }}
# Source: the open string enums of spec/acp-inject.schema.json (codegen/src/open_enums.rs,
# codegen/templates/open-enums/enums.py).
"""The protocol's open string enums (``StopReason``, ``ToolCallStatus``, …) as ``str`` enums.

Each member is its wire string: ``StopReason.END_TURN == "end_turn"``, ``str(member)`` is that
string, and ``match`` takes members as value patterns (``case StopReason.END_TURN:``). A value
this version does not know (an extension such as ``"_x"``, or a newer protocol's) is kept, not
rejected: ``StopReason("_x")`` is a member of its own whose ``value`` is ``"_x"``. The bindings
lift every such field into these types and, where one is sent, accept a member or a plain
string.
"""

from __future__ import annotations

import enum
from typing import Optional

__all__ = [{% for e in enums %}"{{ e.name }}"{% if !loop.last %}, {% endif %}{% endfor %}]


class _Open(str, enum.Enum):
    """An open string enum: known members, plus one per unknown value met."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def _missing_(cls, value: object) -> Optional[_Open]:
        # An unknown string becomes a member of its own (not cached: a peer sending ever new
        # values must not grow the class).
        if not isinstance(value, str):
            return None
        member = str.__new__(cls, value)
        member._name_ = value
        member._value_ = value
        return member
{% for e in enums %}

class {{ e.name }}(_Open):
{{ e.pydoc() }}
{% for v in e.values %}
    {{ v.python() }} = "{{ v.wire }}"
{{ v.pydoc() }}
{% endfor -%}
{% endfor %}
