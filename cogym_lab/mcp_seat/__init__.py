"""Outside agents take a seat: a session's seat served over the Model Context Protocol.

:class:`~cogym_lab.mcp_seat.seat.Seat` is one role of one session as its member sees it;
:class:`~cogym_lab.mcp_seat.bus_seat.BusSeat` holds one over a session's bus, and
:class:`~cogym_lab.mcp_seat.local.LocalSeatSession` runs a new session in this process with one
seat left for it. :mod:`~cogym_lab.mcp_seat.tools` makes the seat's tools from its action specs
(no MCP needed); :mod:`~cogym_lab.mcp_seat.server` serves them with the ``mcp`` SDK (the
``mcp`` extra), which only that module imports. ``cogym-lab mcp`` puts them together.
"""

from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.local import LocalSeatSession
from cogym_lab.mcp_seat.seat import ActOutcome, News, Seat, SeatError
from cogym_lab.mcp_seat.tools import SeatTool, seat_tools

__all__ = ["ActOutcome", "BusSeat", "LocalSeatSession", "News", "Seat", "SeatError", "SeatTool",
           "seat_tools"]
