"""FoW notation: UCI and SAN moves resolved against the FoW move set, PGN read and write.

SAN follows the PGN standard (piece letter, the least disambiguation among FoW moves of the
same piece type to the same square, "x" for captures, "=Q" for promotion, "O-O" / "O-O-O")
with one FoW difference: no "+" or "#" is written, because there is no check in FoW and a
player is never told about one. On input, "+", "#", "!" and "?" suffixes are ignored, "0-0"
is accepted for "O-O", and "e8Q" for "e8=Q". King captures and moves into check are ordinary.

PGN games carry `[Variant "Fog of War"]`; a game that does not start from the initial position
carries `[SetUp "1"]` and `[FEN "..."]`. Errors quote the bad input and, for PGN, its line.

The PGN reader is our own, not python-chess's `chess.pgn`. Its syntax follows the PGN standard
and python-chess's reader (tag pairs, `{}` and `;` comments, `%` escape lines, NAGs and
annotation glyphs, nested variations, several games a file, a UTF-8 byte-order mark), and a
test reads python-chess's exported games to check they agree. What `chess.pgn` would not give:
it is forgiving by design (it skips a malformed tag, an unknown token or an unterminated comment
and logs it), and its errors carry no line number, while a FoW record that a referee or a
belief computation replays must be refused with the line that is wrong; and its moves are
resolved and pushed on a `chess.Board`, whose SAN and legality are not FoW's (here SAN is
resolved against the FoW move set, and a king capture ends the game). The reader also checks
that the result agrees with the moves (a king capture, threefold repetition, 50-move rule or a
side without moves decides it, and no move may follow) and with the `Result` tag; the writer
refuses what the reader would refuse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from caligo.fow.bitboard import SQUARE_NAMES
from caligo.fow.errors import FenError, MoveError, PgnError
from caligo.fow.fen import PositionLike, from_fen, move_to_uci, position_array, to_fen
from caligo.fow.movegen import legal_moves, move_from_uci, resolve_move
from caligo.fow.outcome import Outcome, Referee
from caligo.fow.position_kernels import (
    KIND_CASTLING,
    KIND_EN_PASSANT,
    KIND_PROMOTION,
    PAWN,
    STARTING_FEN,
    UNDO_WORDS,
    make_move,
    move_from,
    move_kind,
    move_promo,
    move_to,
    piece_at,
)
from caligo.fow.values import Move, MoveLike

VARIANT = "Fog of War"
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
_PIECE_LETTERS = "PNBRQK"
_PROMO_LETTERS = "NBRQ"

__all__ = [
    "RESULTS",
    "VARIANT",
    "PgnGame",
    "iter_pgn_games",
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


def move_to_san(pos: PositionLike, move: MoveLike) -> str:
    """Return the SAN of a FoW move of `pos` (no check marks: FoW has no check)."""
    pos = position_array(pos)
    move = resolve_move(pos, move)
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


def parse_san(pos: PositionLike, san: str) -> int:
    """Return the code of the FoW move of `pos` written `san`; raise MoveError quoting it if
    there is none or more than one (`Position.parse_san` returns it as a Move)."""
    if not isinstance(san, str):
        raise MoveError(f"invalid san: {san!r}")
    pos = position_array(pos)
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
    """One PGN game: tag pairs, start position, FoW moves (kernel codes, what `Game.push` and
    the play layer take; `move_list()` gives them as Moves), result, and the outcome the moves
    reached by the rules (None when the record stops before the game is decided on the board,
    e.g. a resignation)."""

    headers: dict[str, str] = field(default_factory=dict)
    start_fen: str = STARTING_FEN
    moves: tuple[int, ...] = ()
    result: str = "*"
    outcome: Outcome | None = None

    def move_list(self) -> list[Move]:
        """The moves as Moves."""
        return [Move.from_code(m) for m in self.moves]

    def __repr__(self) -> str:
        names = f"{self.headers.get('White', '?')} - {self.headers.get('Black', '?')}"
        return f"<PgnGame {names!r} {len(self.moves)} plies {self.result}>"


_SEVEN_TAGS = ("Event", "Site", "Date", "Round", "White", "Black", "Result")
_TAG_NAME_RE = re.compile(r"[A-Za-z0-9_]+\Z")
"""Tag names of the PGN standard (section 8.1.1): letters, digits and underscores."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _check_tags(tags: dict[str, str]) -> None:
    for name, value in tags.items():
        if not isinstance(name, str) or not _TAG_NAME_RE.match(name):
            raise PgnError(f"invalid tag name: {name!r} (letters, digits and '_' only)")
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise PgnError(f"invalid value of tag {name!r}: {value!r} (one line of text)")


# Long by design: the PGN export standard's order, tag by tag then the movetext with its
# comments; each part is a few lines that only make sense in that order.
def write_pgn(
    moves: Iterable[MoveLike],
    start_fen: str = STARTING_FEN,
    headers: dict[str, str] | None = None,
    result: str = "*",
) -> str:
    """Return PGN text for a FoW game (SAN moves, `[Variant "Fog of War"]`, lines <= 80).

    `moves` are Moves, UCI strings, `chess.Move`s or codes, played from `start_fen`. Raises
    PgnError for what `read_pgn` would refuse: a tag name outside the standard's letters,
    digits and underscores, a value with a line break, `FEN`/`SetUp`/`Variant`/`Result` tags
    that contradict the start position, the variant or `result`, a result that contradicts the
    moves (after a king capture the winner's, after a rules draw 1/2-1/2), a move after the end.
    """
    if result not in RESULTS:
        raise PgnError(f"invalid result: {result!r}")
    given = dict(headers or {})
    _check_tags(given)
    pos = from_fen(start_fen)
    start_fen = to_fen(pos)
    standard = start_fen == STARTING_FEN
    if given.get("Result", result) != result:
        raise PgnError(f"tag Result {given['Result']!r} contradicts the result {result!r}")
    if "FEN" in given:
        try:
            same = to_fen(from_fen(given["FEN"])) == start_fen
        except FenError:
            same = False
        if not same:
            raise PgnError(f"tag FEN {given['FEN']!r} contradicts the start {start_fen!r}")
    setup = given.get("SetUp")
    if setup is not None and (setup not in ("0", "1") or (setup == "0" and not standard)):
        raise PgnError(f"tag SetUp {setup!r} contradicts the start {start_fen!r}")
    variant = given.get("Variant")
    if variant is not None and variant.strip().lower() not in _FOW_VARIANTS:
        raise PgnError(f"tag Variant {variant!r} contradicts the game (Fog of War)")
    tags: dict[str, str] = {
        "Event": "?",
        "Site": "?",
        "Date": "????.??.??",
        "Round": "?",
        "White": "?",
        "Black": "?",
    }
    tags.update(given)
    tags["Result"] = result
    tags["Variant"] = VARIANT
    tags.pop("SetUp", None)
    tags.pop("FEN", None)
    if not standard:
        tags["SetUp"] = "1"
        tags["FEN"] = start_fen
    order = list(_SEVEN_TAGS) + [t for t in tags if t not in _SEVEN_TAGS]
    lines = [f'[{t} "{_escape(tags[t])}"]' for t in order]
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    referee = Referee()
    outcome = referee.start(pos)
    tokens: list[str] = []
    for i, move in enumerate(moves):
        if outcome is not None:
            raise PgnError(f"move {move!s} after the end of the game ({outcome.termination.value})")
        code = resolve_move(pos, move)
        white = int(pos[12]) == 0
        number = int(pos[15]) >> 32
        if white:
            tokens.append(f"{number}.")
        elif i == 0:
            tokens.append(f"{number}...")
        tokens.append(move_to_san(pos, code))
        make_move(pos, code, undo)
        outcome = referee.after(pos)
    if outcome is not None and result != outcome.result:
        raise PgnError(
            f"result {result!r} contradicts the moves ({outcome.termination.value}: "
            f"{outcome.result})"
        )
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
_GLYPHS = frozenset(("!", "?", "!!", "??", "!?", "?!"))
"""Annotation glyphs written as their own token (python-chess reads them as NAGs 1-6)."""
_FOW_VARIANTS = {"fog of war", "fogofwar", "fog-of-war", "dark chess", "darkchess"}


def _lines(text: str) -> list[tuple[int, str]]:
    """Numbered lines without the byte-order mark and the `%` escape lines (PGN standard 6)."""
    if not isinstance(text, str):
        raise PgnError(f"pgn text must be a str, got {type(text).__name__}")
    text = text.removeprefix("\ufeff")
    return [(i + 1, line) for i, line in enumerate(text.splitlines()) if not line.startswith("%")]


_Chunk = tuple[dict[str, str], dict[str, tuple[int, str]], list[tuple[int, str]], int]
"""One game's text: tags, the line of each tag, numbered movetext lines, its last line."""


def _chunks(text: str) -> Iterator[_Chunk]:
    """Split a PGN text into games (tag section, then movetext up to the next tag)."""
    lines = _lines(text)
    i = 0
    n = len(lines)
    found = False
    while i < n:
        while i < n and not lines[i][1].strip():
            i += 1
        if i >= n:
            break
        headers: dict[str, str] = {}
        tag_lines: dict[str, tuple[int, str]] = {}
        while i < n and lines[i][1].strip().startswith("["):
            lineno, line = lines[i]
            match = _TAG_RE.match(line.strip())
            if match is None:
                raise PgnError("malformed tag pair", lineno, line)
            headers[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
            tag_lines[match.group(1)] = (lineno, line)
            i += 1
        body: list[tuple[int, str]] = []
        while i < n and not lines[i][1].strip().startswith("["):
            body.append(lines[i])
            i += 1
        found = True
        yield headers, tag_lines, body, lines[i - 1][0]
    if not found:
        raise PgnError("no game in pgn text", 1, text[:80])


def iter_pgn_games(text: str) -> Iterator[PgnGame]:
    """Yield the games of a PGN text one by one (raises PgnError at the first bad one)."""
    for chunk in _chunks(text):
        yield _parse_game(*chunk)


def read_pgns(text: str) -> list[PgnGame]:
    """Parse every game of a PGN text; raise PgnError quoting the line of the first problem."""
    return list(iter_pgn_games(text))


def read_pgn(text: str, index: int | None = None) -> PgnGame:
    """Parse the single game of a PGN text, or its game number `index` (1-based) when given
    (the other games are split off but not parsed); raise PgnError if there is no such game
    (or, without `index`, more than one)."""
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 1):
        raise PgnError(f"game number must be a positive int, got {index!r}")
    chunks = list(_chunks(text))
    if index is None:
        if len(chunks) != 1:
            raise PgnError(f"expected one game, found {len(chunks)} (choose one by number)")
        index = 1
    if index > len(chunks):
        raise PgnError(f"no game {index}: the pgn text holds {len(chunks)}")
    return _parse_game(*chunks[index - 1])


# Long by design: one PGN game's movetext is a state machine (tags checked, then tokens:
# numbers, SAN moves, comments, variations, the result), each token in file order.
def _parse_game(
    headers: dict[str, str],
    tag_lines: dict[str, tuple[int, str]],
    body: Sequence[tuple[int, str]],
    first_line: int,
) -> PgnGame:
    variant = headers.get("Variant")
    if variant is not None and variant.strip().lower() not in _FOW_VARIANTS:
        raise PgnError(f"not a Fog of War game: Variant {variant!r}", *tag_lines["Variant"])
    start_fen = headers.get("FEN", STARTING_FEN)
    try:
        pos = from_fen(start_fen)
    except FenError as exc:
        raise PgnError(f"bad FEN tag: {exc}", *tag_lines["FEN"]) from None
    setup = headers.get("SetUp")
    if setup is not None and setup not in ("0", "1"):
        raise PgnError(f"bad SetUp tag: {setup!r}", *tag_lines["SetUp"])
    if setup == "0" and "FEN" in headers and start_fen != STARTING_FEN:
        raise PgnError("SetUp tag 0 contradicts the FEN tag", *tag_lines["SetUp"])
    tag_result = headers.get("Result")
    if tag_result is not None and tag_result not in RESULTS:
        raise PgnError(f"invalid result tag: {tag_result!r}", *tag_lines["Result"])
    undo = np.empty(UNDO_WORDS, dtype=np.uint64)
    referee = Referee()
    outcome = referee.start(pos)
    moves: list[int] = []
    result = None
    result_at: tuple[int, str] = (first_line, "")
    depth = 0
    text = "\n".join(line for _, line in body)
    offsets = []
    acc = 0
    for _, line in body:
        offsets.append(acc)
        acc += len(line) + 1

    def where(offset: int) -> tuple[int, str]:
        k = 0
        while k + 1 < len(offsets) and offsets[k + 1] <= offset:
            k += 1
        return body[k] if body else (first_line, "")

    for match in _TOKEN_RE.finditer(text):
        tok = match.group(0)
        if tok.startswith("{"):
            if not tok.endswith("}"):
                raise PgnError("unterminated comment", *where(match.start()))
            continue
        if tok.startswith(";") or tok.startswith("$") or tok in _GLYPHS:
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
            result_at = where(match.start())
            continue
        if _MOVE_NUMBER_RE.match(tok):
            continue
        stripped = re.sub(r"^\d+\.(\.\.)?", "", tok)
        if not stripped:
            continue
        if outcome is not None:
            raise PgnError(
                f"move {stripped!r} after the end of the game ({outcome.termination.value})",
                *where(match.start()),
            )
        try:
            m = parse_san(pos, stripped)
        except MoveError as exc:
            raise PgnError(str(exc), *where(match.start())) from None
        moves.append(m)
        make_move(pos, m, undo)
        outcome = referee.after(pos)
    if depth != 0:
        raise PgnError("unbalanced '('", *(where(len(text) - 1) if body else (first_line, "")))
    if result is None:
        result = tag_result or "*"
        result_at = tag_lines.get("Result", (first_line, ""))
    elif tag_result is not None and tag_result != result:
        raise PgnError(f"Result tag {tag_result!r} contradicts the game's result {result!r}",
                       *result_at)  # fmt: skip
    if outcome is not None and result != outcome.result:
        raise PgnError(
            f"result {result!r} contradicts the moves ({outcome.termination.value}: "
            f"{outcome.result})",
            *result_at,
        )
    return PgnGame(
        headers=headers, start_fen=start_fen, moves=tuple(moves), result=result, outcome=outcome
    )
