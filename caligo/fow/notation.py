"""FoW notation: UCI and SAN moves resolved against the FoW move set, PGN read and write.

SAN follows the PGN standard (piece letter, the least disambiguation among FoW moves of the
same piece type to the same square, "x" for captures, "=Q" for promotion, "O-O" / "O-O-O")
with one FoW difference: no "+" or "#" is written, because there is no check in FoW and a
player is never told about one. On input, "+", "#", "!" and "?" suffixes are ignored, "0-0"
is accepted for "O-O", and "e8Q" for "e8=Q". King captures and moves into check are ordinary.

PGN games carry `[Variant "Fog of War"]`; a game that does not start from the initial position
carries `[SetUp "1"]` and `[FEN "..."]`. Errors quote the bad input and, for PGN, its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.errors import FenError, MoveError, PgnError
from caligo.fow.movegen import legal_moves
from caligo.fow.position import (
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    PAWN,
    STARTING_FEN,
    UNDO_WORDS,
    from_fen,
    make_move,
    move_from,
    move_from_uci,
    move_kind,
    move_promo,
    move_to,
    move_to_uci,
    piece_at,
    to_fen,
)

VARIANT = "Fog of War"
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
_PIECE_LETTERS = "PNBRQK"
_PROMO_LETTERS = "NBRQ"

__all__ = [
    "RESULTS",
    "VARIANT",
    "PgnGame",
    "move_from_uci",
    "move_to_san",
    "move_to_uci",
    "parse_san",
    "read_pgn",
    "read_pgns",
    "write_pgn",
]


def _piece_type(pos: np.ndarray, sq: int) -> int:
    code = int(piece_at(pos, sq))
    return -1 if code < 0 else code % 6


def move_to_san(pos: np.ndarray, move: int) -> str:
    """Return the SAN of a FoW move of `pos` (no check marks: FoW has no check)."""
    move = int(move)
    moves = legal_moves(pos)
    if move not in moves:
        raise MoveError(f"illegal move in {to_fen(pos)!r}: {move_to_uci(move)!r}")
    kind = move_kind(move)
    frm, to = move_from(move), move_to(move)
    if kind == KIND_CASTLING:
        return "O-O" if to > frm else "O-O-O"
    ptype = _piece_type(pos, frm)
    capture = kind == KIND_EN_PASSANT or piece_at(pos, to) >= 0
    to_name = SQUARE_NAMES[to]
    if ptype == PAWN:
        text = (SQUARE_NAMES[frm][0] + "x" + to_name) if capture else to_name
        if kind == KIND_PROMOTION:
            text += "=" + _PROMO_LETTERS[move_promo(move)]
        return text
    rivals = [
        m
        for m in moves
        if m != move
        and move_to(m) == to
        and move_kind(m) != KIND_CASTLING
        and _piece_type(pos, move_from(m)) == ptype
    ]
    dis = ""
    if rivals:
        same_file = any(move_from(m) % 8 == frm % 8 for m in rivals)
        same_rank = any(move_from(m) // 8 == frm // 8 for m in rivals)
        if not same_file:
            dis = SQUARE_NAMES[frm][0]
        elif not same_rank:
            dis = SQUARE_NAMES[frm][1]
        else:
            dis = SQUARE_NAMES[frm]
    return _PIECE_LETTERS[ptype] + dis + ("x" if capture else "") + to_name


_SAN_RE = re.compile(r"^([NBRQK])?([a-h])?([1-8])?(x)?([a-h][1-8])(?:=?([NBRQ]))?$")


def parse_san(pos: np.ndarray, san: str) -> int:
    """Return the FoW move of `pos` written `san`; raise MoveError quoting it if none or many."""
    if not isinstance(san, str):
        raise MoveError(f"invalid san: {san!r}")
    text = san.strip().rstrip("+#!?")
    moves = legal_moves(pos)
    if text in ("O-O", "0-0", "O-O-O", "0-0-0"):
        long = len(text) == 5
        for m in moves:
            if move_kind(m) == KIND_CASTLING and (move_to(m) < move_from(m)) == long:
                return m
        raise MoveError(f"illegal san in {to_fen(pos)!r}: {san!r}")
    match = _SAN_RE.match(text)
    if match is None:
        raise MoveError(f"invalid san: {san!r}")
    letter, file_, rank, _capture, to_name, promo = match.groups()
    ptype = _PIECE_LETTERS.index(letter) if letter else PAWN
    to = SQUARE_NAMES.index(to_name)
    found = []
    for m in moves:
        if move_to(m) != to or move_kind(m) == KIND_CASTLING:
            continue
        frm = move_from(m)
        if _piece_type(pos, frm) != ptype:
            continue
        if file_ and SQUARE_NAMES[frm][0] != file_:
            continue
        if rank and SQUARE_NAMES[frm][1] != rank:
            continue
        if move_kind(m) == KIND_PROMOTION:
            if promo is None or _PROMO_LETTERS[move_promo(m)] != promo:
                continue
        elif promo is not None:
            continue
        found.append(m)
    if ptype == PAWN and not file_:
        # a pawn SAN without a file is a push: never a capture from a neighbouring file
        found = [m for m in found if move_from(m) % 8 == to % 8]
    if not found:
        raise MoveError(f"illegal san in {to_fen(pos)!r}: {san!r}")
    if len(found) > 1:
        raise MoveError(f"ambiguous san in {to_fen(pos)!r}: {san!r}")
    return found[0]


# --- PGN -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PgnGame:
    """One PGN game: tag pairs, start position, FoW moves (uint16 codes as ints), result."""

    headers: dict[str, str] = field(default_factory=dict)
    start_fen: str = STARTING_FEN
    moves: tuple[int, ...] = ()
    result: str = "*"


_SEVEN_TAGS = ("Event", "Site", "Date", "Round", "White", "Black", "Result")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def write_pgn(
    moves: list[int] | tuple[int, ...],
    start_fen: str = STARTING_FEN,
    headers: dict[str, str] | None = None,
    result: str = "*",
) -> str:
    """Return PGN text for a FoW game (SAN moves, `[Variant "Fog of War"]`, lines <= 80)."""
    if result not in RESULTS:
        raise PgnError(f"invalid result: {result!r}")
    tags: dict[str, str] = {
        "Event": "?",
        "Site": "?",
        "Date": "????.??.??",
        "Round": "?",
        "White": "?",
        "Black": "?",
    }
    tags.update(headers or {})
    tags["Result"] = result
    tags["Variant"] = VARIANT
    if start_fen != STARTING_FEN:
        tags["SetUp"] = "1"
        tags["FEN"] = start_fen
    order = [t for t in _SEVEN_TAGS] + [t for t in tags if t not in _SEVEN_TAGS]
    lines = [f'[{t} "{_escape(tags[t])}"]' for t in order]
    pos = from_fen(start_fen)
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    tokens: list[str] = []
    for i, m in enumerate(moves):
        white = int(pos[12]) == 0
        number = int(pos[15]) >> 32
        if white:
            tokens.append(f"{number}.")
        elif i == 0:
            tokens.append(f"{number}...")
        tokens.append(move_to_san(pos, m))
        make_move(pos, int(m), undo)
    tokens.append(result)
    body: list[str] = []
    line = ""
    for tok in tokens:
        if line and len(line) + 1 + len(tok) > 80:
            body.append(line)
            line = tok
        else:
            line = f"{line} {tok}" if line else tok
    body.append(line)
    return "\n".join(lines) + "\n\n" + "\n".join(body) + "\n"


_TAG_RE = re.compile(r'^\[\s*([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$')
_MOVE_NUMBER_RE = re.compile(r"^\d+\.(\.\.)?$|^\d+\.\.\.$")
_TOKEN_RE = re.compile(r"\{[^}]*\}?|;[^\n]*|\(|\)|\$\d+|[^\s{}();]+")
_FOW_VARIANTS = {"fog of war", "fogofwar", "fog-of-war", "dark chess", "darkchess"}


def read_pgns(text: str) -> list[PgnGame]:
    """Parse every game of a PGN text; raise PgnError quoting the line of the first problem."""
    games: list[PgnGame] = []
    lines = text.splitlines()
    i = 0
    n = len(lines)
    while i < n:
        while i < n and not lines[i].strip():
            i += 1
        if i >= n:
            break
        headers: dict[str, str] = {}
        while i < n and lines[i].strip().startswith("["):
            match = _TAG_RE.match(lines[i].strip())
            if match is None:
                raise PgnError("malformed tag pair", i + 1, lines[i])
            headers[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
            i += 1
        body: list[tuple[int, str]] = []
        while i < n and not lines[i].strip().startswith("["):
            body.append((i + 1, lines[i]))
            i += 1
        games.append(_parse_game(headers, body, first_line=i + 1))
    if not games:
        raise PgnError("no game in pgn text", 1, text[:80])
    return games


def read_pgn(text: str) -> PgnGame:
    """Parse the single game of a PGN text (raises PgnError if there is not exactly one)."""
    games = read_pgns(text)
    if len(games) != 1:
        raise PgnError(f"expected one game, found {len(games)}")
    return games[0]


def _parse_game(headers: dict[str, str], body: list[tuple[int, str]], first_line: int) -> PgnGame:
    variant = headers.get("Variant")
    if variant is not None and variant.strip().lower() not in _FOW_VARIANTS:
        raise PgnError(f"not a Fog of War game: Variant {variant!r}")
    start_fen = headers.get("FEN", STARTING_FEN)
    try:
        pos = from_fen(start_fen)
    except FenError as exc:
        raise PgnError(f"bad FEN tag: {exc}") from None
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    moves: list[int] = []
    result = None
    depth = 0
    text = "\n".join(line for _, line in body)
    line_starts = [lineno for lineno, _ in body]
    offsets = []
    acc = 0
    for _, line in body:
        offsets.append(acc)
        acc += len(line) + 1

    def where(offset: int) -> tuple[int, str]:
        k = 0
        while k + 1 < len(offsets) and offsets[k + 1] <= offset:
            k += 1
        return (line_starts[k], body[k][1]) if body else (first_line, "")

    for match in _TOKEN_RE.finditer(text):
        tok = match.group(0)
        if tok.startswith("{"):
            if not tok.endswith("}"):
                raise PgnError("unterminated comment", *where(match.start()))
            continue
        if tok.startswith(";") or tok.startswith("$"):
            continue
        if tok == "(":
            depth += 1
            continue
        if tok == ")":
            depth -= 1
            if depth < 0:
                raise PgnError("unbalanced ')'", *where(match.start()))
            continue
        if depth > 0:
            continue
        if result is not None:
            raise PgnError(f"text after the result: {tok!r}", *where(match.start()))
        if tok in RESULTS:
            result = tok
            continue
        if _MOVE_NUMBER_RE.match(tok):
            continue
        stripped = re.sub(r"^\d+\.(\.\.)?", "", tok)
        if not stripped:
            continue
        try:
            m = parse_san(pos, stripped)
        except MoveError as exc:
            raise PgnError(str(exc), *where(match.start())) from None
        moves.append(m)
        make_move(pos, m, undo)
    if depth != 0:
        raise PgnError("unbalanced '('", *(where(len(text) - 1) if body else (first_line, "")))
    if result is None:
        result = headers.get("Result", "*")
        if result not in RESULTS:
            raise PgnError(f"invalid result tag: {result!r}")
    return PgnGame(headers=headers, start_fen=start_fen, moves=tuple(moves), result=result)
