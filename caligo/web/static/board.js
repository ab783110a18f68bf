// Caligo board: renders a Fog of War view (caligo.fow.view.view_data) as 64 DOM squares with
// vector pieces, and lets the player move by clicking or dragging. It only ever receives what
// the server's frame holds: own pieces, visible enemy pieces, fog squares and legal moves.
// During the opponent's turn it lets the player queue one premove, computed from the piece's
// geometry alone (the page knows nothing else); the page sends it only if it is legal on the
// player's own turn.
(() => {
"use strict";

const FILES = "abcdefgh";

function squareName(file, rank) {
  return FILES[file] + (rank + 1);
}

function pieceImage(letter) {
  // "N" is a white knight, "n" a black one (FEN letters, as in the view's "pieces").
  const color = letter === letter.toUpperCase() ? "w" : "b";
  return "/pieces/" + color + letter.toUpperCase() + ".svg";
}

function pieceCode(letter) {
  return (letter === letter.toUpperCase() ? "w" : "b") + letter.toUpperCase();
}

// Pieces of a FEN's board field: {square: letter}.
function fenPieces(fen) {
  const out = {};
  const rows = fen.split(" ")[0].split("/");
  for (let r = 0; r < 8; r++) {
    let f = 0;
    for (const ch of rows[r]) {
      if (ch >= "1" && ch <= "8") { f += Number(ch); continue; }
      out[squareName(f, 7 - r)] = ch;
      f += 1;
    }
  }
  return out;
}

// Squares a piece could reach by its geometry alone, as lichess's premoves do: sliders ignore
// every piece in the way (a blocker may move or be taken first), own-occupied squares count (a
// recapture), pawns may push or take diagonally, the king may castle from its start square.
function premoveDests(pieces, from) {
  const letter = pieces[from];
  if (!letter) return [];
  const white = letter === letter.toUpperCase();
  const type = letter.toUpperCase();
  const f0 = FILES.indexOf(from[0]);
  const r0 = Number(from[1]) - 1;
  const out = [];
  const add = (f, r) => { if (f >= 0 && f < 8 && r >= 0 && r < 8) out.push(squareName(f, r)); };
  const ray = (df, dr) => { for (let i = 1; i < 8; i++) add(f0 + df * i, r0 + dr * i); };
  if (type === "P") {
    const dir = white ? 1 : -1;
    add(f0, r0 + dir);
    if (r0 === (white ? 1 : 6)) add(f0, r0 + 2 * dir);
    add(f0 - 1, r0 + dir);
    add(f0 + 1, r0 + dir);
  } else if (type === "N") {
    for (const [df, dr] of [[1, 2], [2, 1], [2, -1], [1, -2], [-1, -2], [-2, -1], [-2, 1], [-1, 2]]) add(f0 + df, r0 + dr);
  } else if (type === "K") {
    for (let df = -1; df <= 1; df++) for (let dr = -1; dr <= 1; dr++) if (df || dr) add(f0 + df, r0 + dr);
    const home = white ? 0 : 7;
    const rook = white ? "R" : "r";
    if (f0 === 4 && r0 === home) {
      if (pieces[squareName(7, home)] === rook) add(6, home);
      if (pieces[squareName(0, home)] === rook) add(2, home);
    }
  } else {
    if (type !== "B") { ray(1, 0); ray(-1, 0); ray(0, 1); ray(0, -1); }
    if (type !== "R") { ray(1, 1); ray(1, -1); ray(-1, 1); ray(-1, -1); }
  }
  return out;
}

// Every premove of `color` ("w" | "b") as UCI (a pawn reaching the last rank: all promotions).
function premoveMoves(pieces, color) {
  const out = [];
  for (const [sq, letter] of Object.entries(pieces)) {
    if ((letter === letter.toUpperCase()) !== (color === "w")) continue;
    for (const to of premoveDests(pieces, sq)) {
      const last = letter.toUpperCase() === "P" && (to[1] === "8" || to[1] === "1");
      if (last) for (const p of "qnrb") out.push(sq + to + p);
      else out.push(sq + to);
    }
  }
  return out;
}

// A share in percent as a square's label: "100" only when certain, ">99", "37", "<1" (never 0
// for a possible piece).
function heatText(share) {
  if (share >= 1) return "100";
  if (share >= 0.995) return ">99";
  if (share < 0.005) return "<1";
  return String(Math.round(share * 100));
}

class Board {
  // el: container; opts.onMove(uci) is called with a legal move chosen by the player,
  // opts.onPremove(uci | null) when a premove is queued or cancelled.
  constructor(el, opts = {}) {
    this.el = el;
    this.onMove = opts.onMove || null;
    this.onPremove = opts.onPremove || null;
    this.state = { orientation: "white", pieces: {}, fog: [], legal: [], lastMove: null,
                   lost: [], movable: null, interactive: false, premovable: false,
                   premove: null, marks: {}, heat: null, heatTotal: 0 };
    this.selected = null;
    this.drag = null;
    this.squares = {};
    this.el.classList.add("board");
    this.el.innerHTML = "";
    for (let i = 0; i < 64; i++) {
      const sq = document.createElement("div");
      sq.className = "sq";
      const rank = document.createElement("span");
      rank.className = "coord rank";
      const file = document.createElement("span");
      file.className = "coord file";
      sq.append(rank, file);
      this.el.appendChild(sq);
    }
    this.el.addEventListener("pointerdown", (e) => this._down(e));
    this.el.addEventListener("pointermove", (e) => this._move(e));
    this.el.addEventListener("pointerup", (e) => this._up(e));
    this.el.addEventListener("pointercancel", () => this._cancelDrag());
    this.el.addEventListener("contextmenu", (e) => {
      e.preventDefault();
      this.cancelPremove();
    });
    this.promo = opts.promotion || null;
  }

  // state: {orientation, pieces, fog, legal, lastMove:[from,to], lost, movable: "w"|"b"|null,
  //         interactive, premovable, premove: [from, to] | null, marks: {square: class},
  //         heat: {square: count} | null, heatTotal}: a heat map (the review's picture of the
  //         engine's belief) tints each square by count / heatTotal and writes it in percent.
  set(state) {
    this.state = Object.assign({}, this.state, state);
    if (this.selected && !this._dests(this.selected).length) this.selected = null;
    this.render();
  }

  // Play a legal move as if the player had made it on the board (keyboard entry, premoves).
  play(uci) {
    this.selected = null;
    this._commit(uci);
  }

  cancelPremove() {
    if (!this.state.premove) return;
    this.set({ premove: null });
    if (this.onPremove) this.onPremove(null);
  }

  _layout() {
    // Squares in display order, top-left first.
    const out = [];
    const flip = this.state.orientation === "black";
    for (let row = 0; row < 8; row++) {
      for (let col = 0; col < 8; col++) {
        const file = flip ? 7 - col : col;
        const rank = flip ? row : 7 - row;
        out.push({ name: squareName(file, rank), file, rank, row, col });
      }
    }
    return out;
  }

  _premoving() {
    return !this.state.interactive && this.state.premovable;
  }

  _dests(from) {
    if (this._premoving()) return this._own(from) ? premoveDests(this.state.pieces, from) : [];
    return this.state.legal.filter((u) => u.startsWith(from)).map((u) => u.slice(2, 4));
  }

  render() {
    const st = this.state;
    const fog = new Set(st.fog);
    const lost = new Set(st.lost || []);
    const last = st.lastMove ? new Set(st.lastMove) : new Set();
    const pre = st.premove ? new Set(st.premove) : new Set();
    const dests = this.selected ? new Set(this._dests(this.selected)) : new Set();
    const cells = this.el.children;
    const layout = this._layout();
    this.squares = {};
    layout.forEach((s, i) => {
      const cell = cells[i];
      this.squares[s.name] = cell;
      const cls = ["sq", (s.file + s.rank) % 2 ? "light" : "dark"];
      const fogged = fog.has(s.name);
      if (fogged) cls.push("fog");
      // a fogged square of the last move is only outlined: its tint would say "seen"
      if (last.has(s.name)) cls.push(fogged ? "last-fog" : "last");
      if (lost.has(s.name)) cls.push("lost");
      if (pre.has(s.name)) cls.push("premove");
      if (this.selected === s.name) cls.push("selected");
      if (dests.has(s.name)) {
        cls.push(st.pieces[s.name] ? "dest capture" : "dest");
        if (this._premoving()) cls.push("pre-dest");
      }
      const mark = st.marks && st.marks[s.name];
      if (mark) cls.push(mark);
      this._heat(cell, s.name, cls);
      cell.className = cls.join(" ");
      cell.dataset.square = s.name;
      // coordinates follow the orientation on every render: the left column names its rank,
      // the bottom row its file (never a label left over from another orientation)
      const [rankLabel, fileLabel] = cell.querySelectorAll(".coord");
      rankLabel.textContent = s.col === 0 ? String(s.rank + 1) : "";
      fileLabel.textContent = s.row === 7 ? FILES[s.file] : "";
      const letter = st.pieces[s.name];
      const want = letter ? pieceCode(letter) : "";
      if ((cell.dataset.piece || "") !== want) {
        const old = cell.querySelector("img.piece");
        if (old) old.remove();
        if (letter) {
          const img = document.createElement("img");
          img.className = "piece";
          img.src = pieceImage(letter);
          img.alt = letter;
          img.draggable = false;
          cell.prepend(img);
        }
      }
      if (want) cell.dataset.piece = want; else delete cell.dataset.piece;
      if (this.drag && this.drag.from === s.name) cell.classList.add("dragging");
    });
    this.el.classList.toggle("interactive", !!st.interactive || !!st.premovable);
  }

  // The heat of one square: its count as a share of heatTotal, a tint whose strength grows with
  // the square root of the share (small shares stay visible) and the share in percent. Set
  // through the CSSOM (a custom property), which a strict Content-Security-Policy allows.
  _heat(cell, name, cls) {
    const st = this.state;
    let label = cell.querySelector(".heat-label");
    if (!st.heat || !(st.heatTotal > 0)) {
      if (label) label.remove();
      cell.style.removeProperty("--heat");
      delete cell.dataset.count;
      return;
    }
    const count = st.heat[name] || 0;
    const share = count / st.heatTotal;
    cell.dataset.count = String(count);
    cell.style.setProperty("--heat", Math.sqrt(share).toFixed(3));
    cls.push(count ? "heat" : "heat-none");
    if (share >= 0.5) cls.push("heat-high");
    if (!label) {
      label = document.createElement("span");
      label.className = "heat-label";
      cell.append(label);
    }
    label.textContent = count ? heatText(share) : "";
  }

  _squareAt(x, y) {
    const rect = this.el.getBoundingClientRect();
    const col = Math.floor(((x - rect.left) / rect.width) * 8);
    const row = Math.floor(((y - rect.top) / rect.height) * 8);
    if (col < 0 || col > 7 || row < 0 || row > 7) return null;
    return this._layout()[row * 8 + col].name;
  }

  _own(square) {
    const letter = this.state.pieces[square];
    if (!letter || !this.state.movable) return false;
    const white = letter === letter.toUpperCase();
    return (this.state.movable === "w") === white;
  }

  _down(e) {
    if (!(this.state.interactive || this.state.premovable) || e.button > 0) return;
    const sq = this._squareAt(e.clientX, e.clientY);
    if (!sq) return;
    e.preventDefault();
    if (this.selected && sq !== this.selected && this._dests(this.selected).includes(sq)) {
      this._try(this.selected, sq);
      return;
    }
    if (this._own(sq) && this._dests(sq).length) {
      const wasSelected = this.selected === sq;
      this.selected = sq;
      this._startDrag(e, sq, wasSelected);
      this.render();
      return;
    }
    this.selected = null;
    if (this.state.premove) this.cancelPremove();  // a click elsewhere cancels the premove
    else this.render();
  }

  _startDrag(e, sq, wasSelected) {
    const cell = this.squares[sq];
    const img = cell.querySelector("img.piece");
    if (!img) return;
    const size = cell.getBoundingClientRect().width;
    const ghost = img.cloneNode();
    ghost.className = "piece ghost";
    ghost.style.width = size + "px";
    ghost.style.height = size + "px";
    document.body.appendChild(ghost);
    this.drag = { from: sq, ghost, size, moved: false, wasSelected, x0: e.clientX, y0: e.clientY };
    this._place(e.clientX, e.clientY);
    try { this.el.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events */ }
  }

  _place(x, y) {
    const d = this.drag;
    d.ghost.style.left = x - d.size / 2 + "px";
    d.ghost.style.top = y - d.size / 2 + "px";
  }

  _move(e) {
    const d = this.drag;
    if (!d) return;
    if (Math.abs(e.clientX - d.x0) + Math.abs(e.clientY - d.y0) > 3) {
      d.moved = true;
      this.squares[d.from].classList.add("dragging");
    }
    this._place(e.clientX, e.clientY);
    const over = this._squareAt(e.clientX, e.clientY);
    const dests = this._dests(d.from);
    for (const name in this.squares) this.squares[name].classList.toggle("hover", name === over && dests.includes(name));
  }

  _up(e) {
    const d = this.drag;
    if (!d) return;
    this._cancelDrag();
    const sq = this._squareAt(e.clientX, e.clientY);
    if (sq && sq !== d.from && this._dests(d.from).includes(sq)) {
      this._try(d.from, sq);
      return;
    }
    if (sq === d.from && !d.moved) {
      if (d.wasSelected) this.selected = null;  // a second click on the piece unselects it
    } else if (d.moved) {
      this.selected = null;  // dropped off a legal square: the piece goes back
    }
    this.render();
  }

  _cancelDrag() {
    const d = this.drag;
    if (!d) return;
    d.ghost.remove();
    this.drag = null;
    for (const name in this.squares) this.squares[name].classList.remove("hover", "dragging");
  }

  _try(from, to) {
    this.selected = null;
    if (this._premoving()) {
      const letter = this.state.pieces[from];
      const last = letter.toUpperCase() === "P" && (to[1] === "8" || to[1] === "1");
      const uci = from + to + (last ? "q" : "");  // a premoved promotion makes a queen
      this.set({ premove: [from, to] });
      if (this.onPremove) this.onPremove(uci);
      return;
    }
    const moves = this.state.legal.filter((u) => u.startsWith(from + to));
    if (!moves.length) return;
    if (moves.length > 1 && this.promo) {
      this.render();
      this.promo(from, to, moves, (uci) => this._commit(uci));
      return;
    }
    this._commit(moves[0]);
  }

  _commit(uci) {
    // Show the move at once; the server's next frame replaces the whole board anyway.
    const st = this.state;
    const from = uci.slice(0, 2);
    const to = uci.slice(2, 4);
    const pieces = Object.assign({}, st.pieces);
    let letter = pieces[from];
    if (uci.length === 5) letter = letter === letter.toUpperCase() ? uci[4].toUpperCase() : uci[4];
    delete pieces[from];
    pieces[to] = letter;
    const df = FILES.indexOf(to[0]) - FILES.indexOf(from[0]);
    if (letter.toUpperCase() === "K" && Math.abs(df) === 2) {  // castling moves the rook too
      const rank = from[1];
      const rookFrom = (df > 0 ? "h" : "a") + rank;
      const rookTo = (df > 0 ? "f" : "d") + rank;
      if (pieces[rookFrom]) { pieces[rookTo] = pieces[rookFrom]; delete pieces[rookFrom]; }
    }
    this.set({ pieces, legal: [], interactive: false, lastMove: [from, to], lost: [], premove: null });
    if (this.onMove) this.onMove(uci);
  }
}

window.CaligoBoard = { Board, fenPieces, heatText, pieceImage, squareName, premoveDests, premoveMoves };
})();
