// Caligo board: renders a Fog of War view (caligo.fow.view.view_data) as 64 DOM squares with
// vector pieces, and lets the player move by clicking or dragging. It only ever receives what
// the server's frame holds: own pieces, visible enemy pieces, fog squares and legal moves.
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

class Board {
  // el: container; opts.onMove(uci) is called with a legal move chosen by the player.
  constructor(el, opts = {}) {
    this.el = el;
    this.onMove = opts.onMove || null;
    this.state = { orientation: "white", pieces: {}, fog: [], legal: [], lastMove: null,
                   lost: [], movable: null, interactive: false, marks: {} };
    this.selected = null;
    this.drag = null;
    this.squares = {};
    this.el.classList.add("board");
    this.el.innerHTML = "";
    for (let i = 0; i < 64; i++) {
      const sq = document.createElement("div");
      sq.className = "sq";
      this.el.appendChild(sq);
    }
    this.el.addEventListener("pointerdown", (e) => this._down(e));
    this.el.addEventListener("pointermove", (e) => this._move(e));
    this.el.addEventListener("pointerup", (e) => this._up(e));
    this.el.addEventListener("pointercancel", () => this._cancelDrag());
    this.el.addEventListener("contextmenu", (e) => e.preventDefault());
    this.promo = opts.promotion || null;
  }

  // state: {orientation, pieces, fog, legal, lastMove:[from,to], lost, movable: "w"|"b"|null,
  //         interactive, marks: {square: class}}
  set(state) {
    this.state = Object.assign({}, this.state, state);
    if (this.selected && !this._dests(this.selected).length) this.selected = null;
    this.render();
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

  _dests(from) {
    return this.state.legal.filter((u) => u.startsWith(from)).map((u) => u.slice(2, 4));
  }

  render() {
    const st = this.state;
    const fog = new Set(st.fog);
    const lost = new Set(st.lost || []);
    const last = st.lastMove ? new Set(st.lastMove) : new Set();
    const dests = this.selected ? new Set(this._dests(this.selected)) : new Set();
    const cells = this.el.children;
    const layout = this._layout();
    this.squares = {};
    layout.forEach((s, i) => {
      const cell = cells[i];
      this.squares[s.name] = cell;
      const cls = ["sq", (s.file + s.rank) % 2 ? "light" : "dark"];
      if (fog.has(s.name)) cls.push("fog");
      if (last.has(s.name)) cls.push("last");
      if (lost.has(s.name)) cls.push("lost");
      if (this.selected === s.name) cls.push("selected");
      if (dests.has(s.name)) cls.push(st.pieces[s.name] ? "dest capture" : "dest");
      const mark = st.marks && st.marks[s.name];
      if (mark) cls.push(mark);
      cell.className = cls.join(" ");
      cell.dataset.square = s.name;
      const letter = st.pieces[s.name];
      const want = letter ? pieceCode(letter) : "";
      if ((cell.dataset.piece || "") !== want || cell.dataset.coords !== this._coordKey(s)) {
        cell.innerHTML = "";
        if (letter) {
          const img = document.createElement("img");
          img.className = "piece";
          img.src = pieceImage(letter);
          img.alt = letter;
          img.draggable = false;
          cell.appendChild(img);
        }
        this._coords(cell, s);
      }
      if (want) cell.dataset.piece = want; else delete cell.dataset.piece;
      cell.dataset.coords = this._coordKey(s);
      if (this.drag && this.drag.from === s.name) cell.classList.add("dragging");
    });
    this.el.classList.toggle("interactive", !!st.interactive);
  }

  _coordKey(s) {
    return (s.col === 0 ? "r" : "") + (s.row === 7 ? "f" : "");
  }

  _coords(cell, s) {
    if (s.col === 0) {
      const r = document.createElement("span");
      r.className = "coord rank";
      r.textContent = String(s.rank + 1);
      cell.appendChild(r);
    }
    if (s.row === 7) {
      const f = document.createElement("span");
      f.className = "coord file";
      f.textContent = FILES[s.file];
      cell.appendChild(f);
    }
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
    if (!this.state.interactive || e.button > 0) return;
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
    this.render();
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
    for (const name in this.squares) this.squares[name].classList.toggle("hover", name === over && this._dests(d.from).includes(name));
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
    const moves = this.state.legal.filter((u) => u.startsWith(from + to));
    if (!moves.length) return;
    this.selected = null;
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
    this.set({ pieces, legal: [], interactive: false, lastMove: [from, to], lost: [] });
    if (this.onMove) this.onMove(uci);
  }
}

window.CaligoBoard = { Board, fenPieces, pieceImage, squareName };
})();
