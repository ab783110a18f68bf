"""Vector chess pieces for the page, generated at run time by python-chess's `chess.svg.piece`.

python-chess is already a dependency, so the page needs no image files of its own and no CDN:
`/pieces/wN.svg` is `chess.svg.piece(chess.Piece.from_symbol("N"))`, made once and cached.
"""

from __future__ import annotations

import functools
import re

import chess
import chess.svg

from caligo.web.errors import NotFoundError

_NAME_RE = re.compile(r"^[wb][PNBRQK]$")


@functools.cache
def piece_svg(name: str) -> str:
    """Return the SVG of piece `name` ("wP".."bK"); raise NotFoundError for other names."""
    if not _NAME_RE.match(name):
        raise NotFoundError(f"no piece {name!r} (wP..wK, bP..bK)")
    symbol = name[1] if name[0] == "w" else name[1].lower()
    return chess.svg.piece(chess.Piece.from_symbol(symbol), size=45)


__all__ = ["piece_svg"]
