// Caligo web page: lobby, live game over a WebSocket, post-game review. No framework, no CDN.
// During a game everything shown comes from the server's `state` frames, which the server builds
// from the player's own observations; the true board is fetched only once a frame says the game
// is over (the server refuses it before: HTTP 409). A premove stays in this page until the
// player's turn, and is sent then as an ordinary move only if it is legal.
"use strict";

const { Board, fenPieces, pieceImage, premoveMoves } = window.CaligoBoard;
const KINDS = "pnbrqk";
const KIND_NAMES = { all: ["All pieces", "pieces"], p: ["Pawns", "pawns"], n: ["Knights", "knights"],
                     b: ["Bishops", "bishops"], r: ["Rooks", "rooks"], q: ["Queens", "queens"],
                     k: ["King", "king"] };
const $ = (id) => document.getElementById(id);

const TC_KINDS = { "60+2": "Bullet", "180+2": "Blitz", "300+0": "Blitz" };
const RESULT_TEXT = { "1-0": "White wins", "0-1": "Black wins", "1/2-1/2": "Draw", "*": "Aborted" };

// --- seats kept in this browser --------------------------------------------------------------

const seats = {
  all() {
    try { return JSON.parse(localStorage.getItem("caligo.seats") || "{}"); } catch (e) { return {}; }
  },
  get(id) { return this.all()[id] || null; },
  put(id, token) {
    const all = this.all();
    all[id] = token;
    localStorage.setItem("caligo.seats", JSON.stringify(all));
    localStorage.setItem("caligo.current", id);
    this.keepOpen([{ id, label: "" }, ...this.open().filter((g) => g.id !== id)]);
  },
  current() { return localStorage.getItem("caligo.current"); },
  // the games this browser started and has not seen end, newest first: {id, label}
  open() {
    let list = [];
    try { list = JSON.parse(localStorage.getItem("caligo.open") || "[]"); } catch (e) { list = []; }
    if (!Array.isArray(list)) list = [];
    const cur = this.current();
    if (cur && !list.some((g) => g.id === cur)) list.unshift({ id: cur, label: "" });
    return list.filter((g) => g && typeof g.id === "string");
  },
  keepOpen(list) { localStorage.setItem("caligo.open", JSON.stringify(list.slice(0, 20))); },
  label(id, text) {
    const list = this.open();
    const g = list.find((x) => x.id === id);
    if (g && g.label !== text) { g.label = text; this.keepOpen(list); }
  },
  done(id) {
    if (this.current() === id) localStorage.removeItem("caligo.current");
    this.keepOpen(this.open().filter((g) => g.id !== id));
  },
};

// --- small helpers ---------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

function show(name) {
  for (const v of document.querySelectorAll("main.view")) v.hidden = v.id !== "view-" + name;
  window.scrollTo(0, 0);  // a new page starts at its top: a game's clocks in view
}

function showError(text) {
  $("error-text").textContent = text;
  show("error");
}

const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const other = (color) => (color === "white" ? "black" : "white");

// "180+2" (seconds, as the server writes it) -> "3+2" (minutes + seconds, as players say it).
function tcLabel(tc) {
  const m = /^(\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?)$/.exec(tc || "");
  if (!m) return tc === "none" || tc === "-" ? "untimed" : tc;
  const minutes = Number(m[1]) / 60;
  return (Number.isInteger(minutes) ? minutes : m[1] + "s") + "+" + m[2];
}

function clockText(ms) {
  if (ms == null) return "";
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return "0:0" + s.toFixed(1);
  const m = Math.floor(s / 60);
  const ss = Math.floor(s % 60);
  return m + ":" + String(ss).padStart(2, "0");
}

// 18634 -> "18,600": three significant digits, as a player reads a count.
function roughly(n) {
  if (n == null || !isFinite(n)) return "?";
  n = Number(n);
  if (Math.abs(n) < 1000) return String(Math.round(n));
  const digits = Math.floor(Math.log10(Math.abs(n))) + 1;
  const unit = 10 ** (digits - 3);
  return (Math.round(n / unit) * unit).toLocaleString("en-US");
}

function seconds(ms) {
  const s = ms / 1000;
  return (s < 10 ? s.toFixed(1) : String(Math.round(s))) + " s";
}

// The end of a game in words. `you`: the player's colour, or null (a game between engines);
// `names`: {white, black}; `last`: the SAN of the last move, if known.
function endMessage(end, you, names, detail, last) {
  const winner = end.winner;
  const loser = winner ? other(winner) : null;
  const who = (color) => (color === you ? "You" : you ? "Caligo" : cap(color));
  let title = "Draw";
  if (end.result === "*") title = "Game aborted";
  else if (you && winner === you) title = "You won";
  else if (you && winner) title = "You lost";
  else if (winner) title = cap(winner) + " wins";
  let text;
  switch (end.termination) {
    case "king capture":
      if (loser === you) text = "Your king was captured";
      else if (you) text = "You captured " + cap(loser) + "'s king";
      else text = cap(loser) + "'s king was captured";
      if (last) text += " (" + last + ")";
      break;
    case "time forfeit":
      text = loser === you ? "You ran out of time" : who(loser) + " ran out of time";
      break;
    case "resignation":
      text = who(loser) + " resigned";
      break;
    case "aborted": {
      const m = /^(white|black) made no first move/.exec(detail || "");
      if (m && m[1] === you) text = "You did not make your first move in time";
      else if (m) text = who(m[1]) + " did not make a first move in time";
      else text = "The game was aborted before both sides had moved";
      break;
    }
    case "threefold repetition": text = "Draw by threefold repetition"; break;
    case "fifty-move rule": text = "Draw by the fifty-move rule"; break;
    case "no moves": text = "The side to move had no legal move"; break;
    case "engine crash": text = who(loser) + (you ? "'s engine failed" : " failed"); break;
    case "illegal move": text = who(loser) + " played an illegal move"; break;
    default: text = RESULT_TEXT[end.result] + " · " + end.termination;
  }
  return { title, text };
}

// --- typed moves -----------------------------------------------------------------------------

// The player's move from typed text: UCI ("e2e4", "e7e8q") or SAN ("Nf3", "exd5", "O-O",
// "e8=Q"), among `candidates` (UCI). Returns {uci} or {error}. SAN is matched against the
// player's own pieces only: piece letter, destination, optional file/rank of the origin.
function parseMoveText(text, candidates, pieces) {
  const raw = text.trim().replace(/[+#!?]+$/, "");
  if (!raw) return { error: "Type a move such as e2e4 or Nf3." };
  const pick = (list, what) => {
    if (list.length === 1) return { uci: list[0] };
    const queen = list.filter((u) => u.length === 5 && u[4] === "q");
    if (queen.length === 1 && list.every((u) => u.slice(0, 4) === queen[0].slice(0, 4))) return { uci: queen[0] };
    if (!list.length) return { error: "No such move now: " + what };
    return { error: what + " is ambiguous: add the origin's file or rank" };
  };
  const low = raw.toLowerCase();
  if (/^[a-h][1-8][a-h][1-8][qrbn]?$/.test(low)) {
    return pick(candidates.filter((u) => u === low || (low.length === 4 && u.slice(0, 4) === low)), raw);
  }
  const castle = /^[o0]-?[o0](-?[o0])?$/i.exec(raw);
  if (castle) {
    const long = !!castle[1];
    return pick(candidates.filter((u) => {
      const p = pieces[u.slice(0, 2)];
      if (!p || p.toUpperCase() !== "K" || u[0] !== "e") return false;
      return u[2] === (long ? "c" : "g");
    }), raw);
  }
  const tries = [raw];
  if (/^[nrqk]/.test(raw)) tries.push(raw[0].toUpperCase() + raw.slice(1));  // "nf3"
  if (/^b/.test(raw)) tries.push("B" + raw.slice(1));  // "bc4": a b-pawn or a bishop
  for (const t of tries) {
    const m = /^([NBRQK])?([a-h])?([1-8])?x?([a-h][1-8])(?:=?([NBRQnbrq]))?$/.exec(t);
    if (!m) continue;
    const [, piece, file, rank, to, promo] = m;
    const type = piece || "P";
    const found = candidates.filter((u) => {
      const p = pieces[u.slice(0, 2)];
      if (!p || p.toUpperCase() !== type || u.slice(2, 4) !== to) return false;
      if (file && u[0] !== file) return false;
      if (rank && u[1] !== rank) return false;
      if (promo && u[4] !== promo.toLowerCase()) return false;
      return true;
    });
    if (found.length) return pick(found, raw);
  }
  return { error: "No such move now: " + raw };
}

// --- sound (Web Audio tones, no files) -------------------------------------------------------

const sound = {
  ctx: null,
  on() { return localStorage.getItem("caligo.sound") !== "off"; },
  toggle() {
    localStorage.setItem("caligo.sound", this.on() ? "off" : "on");
    this.button();
  },
  button() {
    $("sound").querySelector(".btn-label").textContent = this.on() ? " On" : " Off";
    $("sound").classList.toggle("off", !this.on());
  },
  play(kind) {
    if (!this.on()) return;
    try {
      this.ctx = this.ctx || new AudioContext();
      const tones = { move: [520, 0.06], capture: [330, 0.12], opponent: [440, 0.05],
                      lost: [220, 0.18], end: [660, 0.3] };
      const [freq, dur] = tones[kind] || tones.move;
      const osc = this.ctx.createOscillator();
      const gain = this.ctx.createGain();
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.15, this.ctx.currentTime);
      gain.gain.exponentialRampToValueAtTime(0.001, this.ctx.currentTime + dur);
      osc.connect(gain).connect(this.ctx.destination);
      osc.start();
      osc.stop(this.ctx.currentTime + dur);
    } catch (e) { /* no audio device: stay silent */ }
  },
};

// --- router ----------------------------------------------------------------------------------

let live = null;     // the open game, if any
let review = null;   // the open review, if any
let info = null;

function leave() {
  if (live) { live.close(); live = null; }
  review = null;
}

function route() {
  leave();
  const h = location.hash || "#/";
  let m;
  if ((m = h.match(/^#\/game\/([\w-]+)$/))) return openGame(m[1]);
  if ((m = h.match(/^#\/review\/([\w-]+)$/))) return openReview(m[1]);
  if (h === "#/games") return openGames();
  return openLobby();
}

// --- lobby -----------------------------------------------------------------------------------

const choice = { color: "random", tc: "180+2", strength: "mt=1" };

function choiceButtons(box, options, labels, key, changed) {
  box.innerHTML = "";
  for (const value of options) {
    const b = el("button", { type: "button", text: labels(value) });
    b.dataset[key] = value;
    if (choice[key] === value) b.classList.add("on");
    b.addEventListener("click", () => {
      choice[key] = value;
      for (const x of box.children) x.classList.toggle("on", x === b);
      if (changed) changed();
    });
    box.append(b);
  }
}

function gamesTable(box, games) {
  box.innerHTML = "";
  if (!games.length) { box.append(el("p", { class: "muted", text: "No finished game yet." })); return; }
  const table = el("table", { class: "game-list" });
  table.append(el("tr", {}, el("th", { class: "date", text: "Date" }), el("th", { text: "White" }),
    el("th", { text: "Black" }), el("th", { text: "Result" }), el("th", { class: "ending", text: "Ending" }),
    el("th", { class: "tc", text: "Time" }), el("th")));
  for (const g of games) {
    table.append(el("tr", { "data-game": g.id },
      el("td", { class: "date", text: (g.created || "").replace("T", " ").slice(0, 16) }),
      el("td", { class: "name", text: g.white }), el("td", { class: "name", text: g.black }),
      el("td", { class: "res", text: g.result }), el("td", { class: "ending", text: g.termination }),
      el("td", { class: "tc", text: tcLabel(g.tc) }),
      el("td", {}, el("a", { href: "#/review/" + g.id, text: "Review" }))));
  }
  box.append(table);
}

// Every game this browser started that is still being played, each with its own button (the
// server says which still run: 409 from the reveal; one that ended meanwhile is forgotten).
async function showOpenGames() {
  const box = $("resume");
  const still = [];
  for (const g of seats.open().slice(0, 5)) {
    let status = 0;
    try { status = (await fetch("/api/games/" + encodeURIComponent(g.id), { method: "GET" })).status; } catch (e) { status = 409; }
    if (status === 409) still.push(g);
    else if (status === 200 || status === 404) seats.done(g.id);
  }
  box.replaceChildren(...still.map((g) => {
    const b = el("button", { type: "button", class: "secondary", text: "Resume your game" + (g.label ? " " + g.label : "") });
    b.onclick = () => { location.hash = "#/game/" + g.id; };
    return b;
  }));
  box.hidden = !still.length;
}

async function openLobby() {
  show("lobby");
  try {
    if (!info) info = await (await fetch("/api/info")).json();
  } catch (e) { return showError("The server does not answer."); }
  const tcNames = {};
  for (const t of info.time_controls) tcNames[t.tc] = t.label + (TC_KINDS[t.tc] ? " · " + TC_KINDS[t.tc] : "");
  choiceButtons($("tc-choices"), info.time_controls.map((t) => t.tc), (v) => tcNames[v], "tc");
  const strengths = info.strengths || [];
  $("strength-field").hidden = !strengths.length;
  $("strength-label").textContent = info.strength_kind === "level" ? "Caligo's level" : "Caligo's thinking time";
  if (strengths.length && !strengths.includes(choice.strength)) choice.strength = info.default_strength || strengths[0];
  const titles = info.strength_titles || {};
  const strengthNote = () => { $("strength-note").textContent = titles[choice.strength] || ""; };
  choiceButtons($("strength-choices"), strengths, (v) => (info.strength_labels || {})[v] || v, "strength", strengthNote);
  strengthNote();
  for (const b of $("color-choices").children) b.classList.toggle("on", b.dataset.color === choice.color);
  $("engine-note").textContent = info.about || "";
  showOpenGames();
  $("lobby-error").hidden = true;
  const games = await (await fetch("/api/games?limit=8")).json();
  gamesTable($("lobby-games"), games);
}

// Why the server refused a new game, in words for the player: a full server (503), too many
// games started or running from this address (429), anything else with the server's message.
function refusal(status, data, retryAfter) {
  const wait = Number(data.retry_after || retryAfter) || 0;
  const later = wait ? " Try again in " + waitText(wait) + "." : "";
  if (status === 503) return "The server is full: it is running as many games as it can." +
    (later || " Try again in a minute.");
  if (status === 429 && data.code === "too_many_games") return cap(data.error) + ".";
  if (status === 429) return "You started too many games in a short time." + later;
  return data.error || "the server answered " + status + ".";
}

function waitText(seconds) {
  if (seconds < 60) return seconds + (seconds === 1 ? " second" : " seconds");
  const m = Math.ceil(seconds / 60);
  return m + (m === 1 ? " minute" : " minutes");
}

async function postGame(url, body) {
  let r;
  try {
    r = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
  } catch (e) { throw new Error("the server does not answer."); }
  let data = {};
  try { data = await r.json(); } catch (e) { data = {}; }
  if (!r.ok) throw new Error(refusal(r.status, data, r.headers.get("Retry-After")));
  seats.put(data.game, data.seat);
  location.hash = "#/game/" + data.game;
}

async function startGame() {
  const button = $("start");
  button.disabled = true;
  try {
    const body = { color: choice.color, tc: choice.tc };
    if ((info.strengths || []).length) body.strength = choice.strength;
    await postGame("/api/games", body);
  } catch (e) {
    $("lobby-error").textContent = "Could not start a game: " + e.message;
    $("lobby-error").hidden = false;
  } finally {
    button.disabled = false;
  }
}

async function openGames() {
  show("games");
  const games = await (await fetch("/api/games")).json();
  gamesTable($("all-games"), games);
}

// --- the live game ---------------------------------------------------------------------------

class LiveGame {
  constructor(id, token) {
    this.id = id;
    this.token = token;
    this.state = null;
    this.recvAt = 0;
    this.closed = false;
    this.delay = 500;
    this.flipped = false;
    this.premove = null;
    this.reveal = null;     // the finished game's reveal, fetched after the end
    this.cursor = 0;        // the ply shown while stepping through a finished game
    this.ownView = false;   // stepping shows what the player saw instead of the whole board
    this.board = new Board($("board"), {
      onMove: (uci) => this.move(uci),
      onPremove: (uci) => this.setPremove(uci),
      promotion: (from, to, moves, done) => this.promote(to, moves, done),
    });
    this.timer = setInterval(() => this.tick(), 100);
    $("result").hidden = true;
    $("result").onclick = (e) => { if (e.target === $("result")) $("result").hidden = true; };
    $("promotion").hidden = true;
    $("moves").innerHTML = "";
    $("move-input").value = "";
    $("stepper").hidden = true;
    $("status").textContent = "Connecting…";
    this.connect();
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const url = proto + "://" + location.host + "/ws/games/" + this.id + "?seat=" + encodeURIComponent(this.token);
    const ws = new WebSocket(url);
    this.ws = ws;
    // say something at once: the server closes a socket that sends nothing (an idle one)
    ws.onopen = () => { this.delay = 500; ws.send(JSON.stringify({ type: "sync" })); };
    ws.onmessage = (ev) => {
      if (this.closed) return;
      const f = JSON.parse(ev.data);
      if (f.type === "state") this.onState(f);
      else if (f.type === "error") this.onError(f);
    };
    ws.onclose = (ev) => {
      if (this.closed || ws !== this.ws) return;
      if (ev.code === 4403) return;
      if (this.state && this.state.status === "over") return;
      if (ev.code === 4429) {  // this address holds too many game connections
        this.setStatus("Not connected: " + (ev.reason || "too many connections") +
          ". Close other Caligo tabs; retrying…", "warn");
        this.delay = 8000;
      } else {
        this.setStatus("Connection lost, reconnecting…", "warn");
      }
      setTimeout(() => { if (!this.closed) this.connect(); }, this.delay);
      this.delay = Math.min(this.delay * 2, ev.code === 4429 ? 30000 : 4000);
    };
  }

  close() {
    this.closed = true;
    clearInterval(this.timer);
    if (this.ws) this.ws.close();
  }

  playing() {
    return !!this.state && this.state.status === "playing";
  }

  move(uci) {
    if (!this.send({ type: "move", uci, ply: this.state.ply })) {
      this.onState(this.state);  // put the piece back: the server never saw the move
      this.setStatus("Not connected: your move was not sent. Reconnecting…", "warn");
      return;
    }
    this.setStatus("Caligo is thinking…", "thinking");
    this.pending = true;
    this.board.set({ premovable: true });  // the next move may be queued already
  }

  send(msg) {  // true if it went out
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(msg));
      return true;
    }
    this.toast("Not connected: nothing was sent. Reconnecting…");
    return false;
  }

  setPremove(uci) {
    this.premove = uci;
    if (!uci) this.board.set({ premove: null });
    if (this.playing() && !this.state.your_turn) this.showTurn();
  }

  onError(f) {
    if (f.code === "forbidden") {
      this.closed = true;
      showError("This browser holds no seat in game " + this.id + ". " + f.message);
      return;
    }
    this.toast(f.message);
    this.send({ type: "sync" });  // put the board back as the server has it
  }

  toast(text) {
    const t = $("toast");
    t.textContent = text;
    t.hidden = false;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
  }

  setStatus(text, cls) {
    const s = $("status");
    s.textContent = text;
    s.className = "status" + (cls ? " " + cls : "");
  }

  orientation() {
    const f = this.state;
    return this.flipped ? other(f.color) : f.color;
  }

  flip() {
    this.flipped = !this.flipped;
    if (!this.state) return;
    this.board.set({ orientation: this.orientation() });
    this.renderBars();
    this.promoteClose();
  }

  onState(f) {
    const prev = this.state;
    this.state = f;
    this.pending = false;
    this.recvAt = performance.now();
    const over = f.status === "over";
    if (over) this.premove = null;
    else seats.label(this.id, "as " + cap(f.color) + " against " + f.opponent + ", " + tcLabel(f.tc));
    const v = f.view;
    const hint = v.hints.own_last_move;
    if (!this.reveal) {  // after the end, the revealed game stays on the board
      this.board.set({
        orientation: this.orientation(),
        pieces: v.pieces,
        fog: v.fog,
        legal: f.your_turn ? v.legal_moves : [],
        lastMove: hint ? [hint.slice(0, 2), hint.slice(2, 4)] : null,
        lost: v.hints.lost,
        movable: f.color === "white" ? "w" : "b",
        interactive: f.your_turn,
        premovable: !over && !f.your_turn,
        premove: this.premove ? [this.premove.slice(0, 2), this.premove.slice(2, 4)] : null,
        marks: {},
      });
      this.renderMoves(f);
    }
    this.renderBars();
    this.tick();
    if (over) {
      this.onEnd(f, prev);
      return;
    }
    this.showTurn();
    $("resign").hidden = false;
    $("flip").hidden = false;
    $("move-entry").hidden = false;
    $("after-review").hidden = $("after-new").hidden = $("after-rematch").hidden = true;
    $("abort").hidden = f.ply >= 2;
    document.title = (f.your_turn ? "▶ Your move · " : "") + "Caligo · Fog of War";
    if (prev && f.ply > prev.ply) {
      const last = f.moves[f.moves.length - 1];
      if (last && last.san) sound.play(last.san.includes("x") ? "capture" : "move");
      else sound.play(v.hints.lost.length ? "lost" : "opponent");
    }
    if (f.your_turn && this.premove) this.playPremove(f);
  }

  playPremove(f) {
    const uci = this.premove;
    this.premove = null;
    $("status").classList.remove("has-premove");
    if (f.view.legal_moves.includes(uci)) {
      this.board.play(uci);  // sent as an ordinary move of this ply
    } else {
      this.board.set({ premove: null });
      this.toast("Premove " + uci + " cancelled: it is not legal now.");
    }
  }

  showTurn() {
    const f = this.state;
    if (f.your_turn) {
      const first = f.clocks && f.clocks.first_move_ms != null;
      this.setStatus(first ? this.firstMoveText() : "Your move", "turn");
    } else {
      const pre = this.premove ? " · premove " + this.premove + " (click the board to cancel)" : "";
      this.setStatus("Caligo is thinking…" + pre, "thinking");
    }
  }

  firstMoveText() {
    const f = this.state;
    const left = f.clocks.first_move_ms - (performance.now() - this.recvAt);
    return "Your first move: " + Math.max(0, Math.ceil(left / 1000)) + " s, or the game is aborted";
  }

  renderBars() {
    const f = this.state;
    const bottom = this.orientation();
    for (const [pos, color] of [["bottom", bottom], ["top", other(bottom)]]) {
      const name = color === f.color ? "You" : f.opponent;
      $("name-" + pos).replaceChildren(el("span", { class: "dot " + color, title: color }),
        el("span", { class: "who", text: name, title: name }));
      $("clock-" + pos).dataset.color = color;
    }
    this.renderTally(f);
  }

  async onEnd(f, prev) {
    seats.done(this.id);
    const first = !prev || prev.status !== "over";
    $("resign").hidden = $("abort").hidden = true;
    $("move-entry").hidden = true;
    $("after-review").hidden = $("after-new").hidden = $("after-rematch").hidden = false;
    $("after-review").href = $("result-review").href = "#/review/" + this.id;
    const names = { [f.color]: "You", [other(f.color)]: f.opponent };
    if (!this.endText) this.endText = endMessage(f.end, f.color, names, f.detail, null);
    this.showEnd();
    if (first) {
      sound.play("end");
      $("result").hidden = false;
    }
    if (!this.reveal && !this.revealing) {
      this.revealing = true;
      // the game is over: now (and only now) the server reveals the true game
      try {
        const r = await fetch("/api/games/" + this.id);
        if (r.ok && !this.closed) this.reveal = await r.json();
      } catch (e) { /* the board stays as the player saw it */ }
      if (!this.reveal || this.closed) return;
      const plies = this.reveal.plies;
      const lastSan = plies.length ? plies[plies.length - 1].san : null;
      if (f.end.termination === "king capture") {
        this.endText = endMessage(f.end, f.color, names, f.detail, lastSan);
        this.showEnd();
      }
      $("stepper").hidden = false;  // before stepping: it takes room from the move list
      this.renderFullMoves();
      this.go(plies.length);
    }
  }

  showEnd() {
    const t = this.endText;
    this.setStatus(t.title + ": " + t.text, "over");
    $("result-title").textContent = t.title;
    $("result-text").textContent = t.text;
  }

  // Step through the finished game: the true board (or what the player saw) at `ply`.
  go(ply) {
    const data = this.reveal;
    if (!data) return;
    const n = data.plies.length;
    this.cursor = Math.max(0, Math.min(n, ply));
    const p = this.cursor ? data.plies[this.cursor - 1] : null;
    const marks = {};
    let lastMove = p ? [p.uci.slice(0, 2), p.uci.slice(2, 4)] : null;
    if (p && this.cursor === n && data.termination === "king capture") {
      marks[p.uci.slice(0, 2)] = "capture-from";  // the piece that took the king, and where
      marks[p.uci.slice(2, 4)] = "capture-to";
      lastMove = null;
    }
    const you = this.state.color;
    if (this.ownView) {
      const v = p ? p[you] : data.initial[you];
      const hint = v.hints.own_last_move;
      this.board.set({ pieces: v.pieces, fog: v.fog, lost: v.hints.lost, marks: {},
                       lastMove: hint ? [hint.slice(0, 2), hint.slice(2, 4)] : null });
    } else {
      this.board.set({ pieces: fenPieces(p ? p.fen : data.initial.fen), fog: [], lost: [],
                       lastMove, marks });
    }
    for (const m of document.querySelectorAll("#moves .m")) {
      m.classList.toggle("current", Number(m.dataset.ply) === this.cursor);
    }
    const cur = document.querySelector("#moves .m.current");
    if (cur) cur.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  toggleView() {
    this.ownView = !this.ownView;
    $("st-view").textContent = this.ownView ? "Whole board" : "Your view";
    this.go(this.cursor);
  }

  renderFullMoves() {
    const box = $("moves");
    box.innerHTML = "";
    const plies = this.reveal.plies;
    const you = this.state.color;
    for (let i = 0; i < plies.length; i += 2) {
      const row = el("div", { class: "mrow" }, el("span", { class: "num", text: i / 2 + 1 + "." }));
      for (const p of [plies[i], plies[i + 1]]) {
        if (!p) continue;
        row.append(el("span", { class: "m step" + (p.mover === you ? " own" : ""), text: p.san,
                                "data-ply": p.ply, onclick: () => this.go(p.ply) }));
      }
      box.append(row);
    }
  }

  renderMoves(f) {
    const box = $("moves");
    box.innerHTML = "";
    const byNumber = [];
    for (const m of f.moves) {
      const n = Math.floor((m.ply - 1) / 2);
      byNumber[n] = byNumber[n] || [null, null];
      byNumber[n][(m.ply - 1) % 2] = m;
    }
    byNumber.forEach((pair, n) => {
      const row = el("div", { class: "mrow" }, el("span", { class: "num", text: n + 1 + "." }));
      for (const m of pair) {
        if (!m) { row.append(el("span", { class: "m" })); continue; }
        row.append(m.san
          ? el("span", { class: "m own", text: m.san, "data-ply": m.ply })
          : el("span", { class: "m opp", text: "…", title: "Caligo's move, unseen", "data-ply": m.ply }));
      }
      box.append(row);
    });
    box.scrollTop = box.scrollHeight;
    box.scrollLeft = box.scrollWidth;
  }

  renderTally(f) {
    const mine = f.color === "white" ? "w" : "b";
    const theirs = mine === "w" ? "b" : "w";
    const row = (letters, color, balance) => {
      const box = el("span", { class: "tally-row" });
      for (const p of letters) {
        const letter = color === "w" ? p.toUpperCase() : p;
        box.append(el("img", { src: pieceImage(letter), alt: letter, class: "tally-piece" }));
      }
      if (balance > 0) box.append(el("span", { class: "balance", text: "+" + balance }));
      return box;
    };
    const m = f.material;
    const mineRow = row(m.captured, theirs, m.balance);   // what the player took
    const theirRow = row(m.lost, mine, -m.balance);       // what the player lost
    const youBottom = this.orientation() === f.color;
    $("tally-bottom").replaceChildren(youBottom ? mineRow : theirRow);
    $("tally-top").replaceChildren(youBottom ? theirRow : mineRow);
  }

  tick() {
    const f = this.state;
    const top = $("clock-top");
    const bottom = $("clock-bottom");
    if (!f || !f.clocks) {
      top.hidden = bottom.hidden = true;
      return;
    }
    top.hidden = bottom.hidden = false;
    const c = f.clocks;
    const elapsed = performance.now() - this.recvAt;
    for (const node of [top, bottom]) {
      const color = node.dataset.color;
      let ms = c[color];
      const running = f.status === "playing" && c.running === color;
      if (running) ms -= elapsed;
      ms = Math.max(0, ms);
      node.textContent = clockText(ms);
      node.classList.toggle("running", running);
      node.classList.toggle("low", ms < 20000);
    }
    if (f.status === "playing" && f.your_turn && c.first_move_ms != null) {
      this.setStatus(this.firstMoveText(), "turn");
    }
  }

  typed(text) {
    const f = this.state;
    if (!this.playing()) return;
    const input = $("move-input");
    const pieces = this.board.state.pieces;  // after an own move not yet answered, too
    const mine = f.color === "white" ? "w" : "b";
    const yourTurn = f.your_turn && !this.pending;
    const candidates = yourTurn ? f.view.legal_moves : premoveMoves(pieces, mine);
    const got = parseMoveText(text, candidates, pieces);
    if (got.error) {
      input.classList.add("bad");
      this.toast(got.error);
      return;
    }
    input.classList.remove("bad");
    input.value = "";
    if (yourTurn) this.board.play(got.uci);
    else {
      this.board.set({ premove: [got.uci.slice(0, 2), got.uci.slice(2, 4)] });
      this.setPremove(got.uci);
    }
  }

  promote(to, moves, done) {
    const box = $("promotion");
    box.innerHTML = "";
    const white = this.state.color === "white";
    const file = "abcdefgh".indexOf(to[0]);
    const col = this.orientation() === "white" ? file : 7 - file;
    box.style.left = col * 12.5 + "%";
    const top = (to[1] === "8") === (this.orientation() === "white");
    box.classList.toggle("from-bottom", !top);
    for (const p of ["q", "n", "r", "b"]) {
      const uci = moves.find((u) => u.endsWith(p));
      if (!uci) continue;
      const letter = white ? p.toUpperCase() : p;
      const b = el("button", { type: "button", class: "promo", "data-piece": p, title: p },
        el("img", { src: pieceImage(letter), alt: letter }));
      b.addEventListener("click", (e) => { e.stopPropagation(); box.hidden = true; done(uci); });
      box.append(b);
    }
    box.hidden = false;
    const cancel = (e) => {
      if (box.contains(e.target)) return;
      box.hidden = true;
      document.removeEventListener("pointerdown", cancel, true);
      this.board.render();
    };
    setTimeout(() => document.addEventListener("pointerdown", cancel, true), 0);
  }

  promoteClose() {
    $("promotion").hidden = true;
  }

  async rematch() {
    for (const b of [$("result-rematch"), $("after-rematch")]) b.disabled = true;
    try {
      await postGame("/api/games/" + this.id + "/rematch", { seat: this.token });
    } catch (e) {
      this.toast("No rematch: " + e.message);
    } finally {
      for (const b of [$("result-rematch"), $("after-rematch")]) b.disabled = false;
    }
  }
}

function openGame(id) {
  const token = seats.get(id);
  if (!token) {
    showError("This browser holds no seat in game " + id + ". If the game is over, its review is at #/review/" + id + ".");
    return;
  }
  show("game");
  sound.button();
  live = new LiveGame(id, token);
}

// --- review ----------------------------------------------------------------------------------

class Review {
  constructor(data) {
    this.data = data;
    this.ply = data.plies.length;
    const human = data.human || "white";
    this.truth = new Board($("board-truth"));
    this.white = new Board($("board-white"));
    this.black = new Board($("board-black"));
    this.belief = new Board($("board-belief"));
    this.kind = "all";
    this.kindsFor = null;
    const pictured = [data.initial, ...data.plies].some((p) => p.beliefs && Object.keys(p.beliefs).length);
    $("belief-fig").hidden = !pictured;
    $("review-boards").classList.toggle("with-belief", pictured);
    this.side = human;
    const range = $("rv-range");
    range.max = String(data.plies.length);
    range.oninput = () => this.go(Number(range.value));
    $("rv-first").onclick = () => this.go(0);
    $("rv-prev").onclick = () => this.go(this.ply - 1);
    $("rv-next").onclick = () => this.go(this.ply + 1);
    $("rv-last").onclick = () => this.go(data.plies.length);
    $("rv-flip").onclick = () => {
      this.side = other(this.side);
      this.go(this.ply);
    };
    const base = "/api/games/" + data.id;
    $("dl-pgn").href = base + "/pgn";
    $("dl-standard").href = base + "/pgn/standard";
    $("dl-white").href = base + "/transcript/white";
    $("dl-black").href = base + "/transcript/black";
    const std = data.standard;
    $("pgn-note").textContent = std && std.first
      ? "Standard chess programs read the Fog of War PGN only up to " + std.first + ", the first " +
        "move that only Fog of War allows (no check: a king may be left or moved into attack, " +
        "castle through attack, or be captured). The PGN for other chess programs holds the " +
        std.plies + " moves before it and lists the rest in a comment."
      : "Every move of this game is also legal in standard chess: both PGNs hold all of them.";
    const you = (c) => (data.human === c ? " (you)" : "");
    $("review-title").textContent = data.white + you("white") + " vs " + data.black + you("black");
    const last = data.plies.length ? data.plies[data.plies.length - 1].san : null;
    const end = { result: data.result, termination: data.termination,
                  winner: { "1-0": "white", "0-1": "black" }[data.result] || null };
    const msg = endMessage(end, data.human, {}, data.detail, last);
    const meta = $("review-meta");
    meta.textContent = data.result + " · " + msg.text + " · " + tcLabel(data.tc) + " · " +
      (data.created || "").replace("T", " ").slice(0, 16);
    meta.title = data.detail || "";
    this.renderMoves();
    this.go(this.ply);
  }

  go(ply) {
    const n = this.data.plies.length;
    this.ply = Math.max(0, Math.min(n, ply));
    const p = this.ply ? this.data.plies[this.ply - 1] : null;
    const fen = p ? p.fen : this.data.initial.fen;
    this.truth.set({ orientation: this.side, pieces: fenPieces(fen), fog: [],
                     lastMove: p ? [p.uci.slice(0, 2), p.uci.slice(2, 4)] : null, lost: [] });
    for (const [board, color] of [[this.white, "white"], [this.black, "black"]]) {
      const v = p ? p[color] : this.data.initial[color];
      const hint = v.hints.own_last_move;
      board.set({ orientation: this.side, pieces: v.pieces, fog: v.fog,
                  lastMove: hint ? [hint.slice(0, 2), hint.slice(2, 4)] : null, lost: v.hints.lost });
    }
    $("rv-range").value = String(this.ply);
    $("rv-label").textContent = p
      ? "Ply " + this.ply + " / " + n + ": " + Math.ceil(this.ply / 2) + (p.mover === "white" ? ". " : "… ") + p.san
      : "Start / " + n;
    for (const m of document.querySelectorAll("#rv-moves .m")) {
      m.classList.toggle("current", Number(m.dataset.ply) === this.ply);
    }
    const cur = document.querySelector("#rv-moves .m.current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
    this.renderDiag(p);
    this.renderBelief(fen);
  }

  // The engine's name in sentences: "Caligo", or the name the game records.
  engineName(color) {
    const name = color === "white" ? this.data.white : this.data.black;
    return /^Caligo\b/.test(name) ? "Caligo" : name;
  }

  // The piece-kind buttons, with the pieces of `them` (whose pieces the picture is about).
  renderKinds(them) {
    const box = $("belief-kinds");
    if (this.kindsFor !== them) {
      this.kindsFor = them;
      box.innerHTML = "";
      for (const k of ["all", ...KINDS]) {
        const label = KIND_NAMES[k][0];
        const b = el("button", { type: "button", "data-kind": k, title: label, "aria-label": label,
                                 onclick: () => { this.kind = k; this.go(this.ply); } });
        if (k === "all") b.append(el("span", { text: "All" }));
        else b.append(el("img", { src: pieceImage(them === "white" ? k.toUpperCase() : k), alt: "" }));
        box.append(b);
      }
    }
    for (const b of box.children) {
      const on = b.dataset.kind === this.kind;
      b.classList.toggle("on", on);
      b.setAttribute("aria-pressed", String(on));
    }
  }

  // What the engine believed about the position on the boards (`fen`): per square the share of
  // its possible positions P with one of the other side's pieces (of the chosen kind) there,
  // those pieces' true squares ringed, and |P| in words. Only in the review: the server sends
  // the pictures with the reveal, which it refuses while the game runs.
  renderBelief(fen) {
    if ($("belief-fig").hidden) return;
    const d = this.data;
    const n = d.plies.length;
    const i = this.ply;
    const about = (i ? d.plies[i - 1].beliefs : d.initial.beliefs) || {};
    const next = i < n ? d.plies[i] : null;
    let believer = d.human ? other(d.human) : null;
    if (!believer) {
      const toMove = next ? next.mover : null;
      believer = about[toMove] ? toMove : Object.keys(about)[0] || this.kindsFor && other(this.kindsFor) || "black";
    }
    const pic = about[believer] || null;
    const them = other(believer);
    this.renderKinds(them);
    const wanted = this.kind === "all" ? KINDS : this.kind;
    const pieces = {};
    const marks = {};
    for (const [sq, letter] of Object.entries(fenPieces(fen))) {
      const white = letter === letter.toUpperCase();
      if ((white ? "white" : "black") !== them || !wanted.includes(letter.toLowerCase())) continue;
      pieces[sq] = letter;
      marks[sq] = "truth";
    }
    let heat = null;
    if (pic) {
      heat = {};
      for (const k of wanted) {
        for (const [sq, count] of Object.entries(pic.counts[k] || {})) heat[sq] = (heat[sq] || 0) + count;
      }
    }
    this.belief.set({ orientation: this.side, pieces, fog: [], marks, heat, heatTotal: pic ? pic.sample : 0 });
    $("board-belief").dataset.sample = pic ? String(pic.sample) : "";
    const name = this.engineName(believer);
    const yours = d.human === them;
    $("belief-title").textContent = "What " + name + " believed";
    const move = next ? Math.ceil(next.ply / 2) + (next.mover === "white" ? ". " : "… ") + next.san : "";
    let when;
    if (!pic) {
      when = i === 0 ? "The start: both sides know the position."
        : !next ? "The game is over. Step back (← or the slider) to see what " + name + " believed before each move."
        : name + " reported no belief here.";
    } else if (next && next.mover === believer) {
      when = "Before its move " + move + ": where it thought " + (yours ? "your" : cap(them) + "'s") + " pieces could be.";
    } else {
      when = "After its move, while " + (yours ? "you" : cap(them)) + " chose " + (move || "a move") +
        ": where it thought " + (yours ? "your" : cap(them) + "'s") + " pieces could be.";
    }
    $("belief-when").textContent = when;
    const whose = yours ? "your " : cap(them) + "'s ";
    const kindWords = this.kind === "all" ? "one of " + whose + "pieces" : whose + KIND_NAMES[this.kind][1];
    $("belief-size").textContent = pic
      ? beliefSize(pic) + " Each square: the share of them with " + kindWords + " there; " +
        (yours ? "your" : cap(them) + "'s") + " true pieces are ringed."
      : "";
  }

  renderMoves() {
    const box = $("rv-moves");
    box.innerHTML = "";
    const plies = this.data.plies;
    for (let i = 0; i < plies.length; i += 2) {
      const row = el("div", { class: "mrow" }, el("span", { class: "num", text: i / 2 + 1 + "." }));
      for (const p of [plies[i], plies[i + 1]]) {
        if (!p) continue;
        row.append(el("span", { class: "m", text: p.san, "data-ply": p.ply, onclick: () => this.go(p.ply) }));
      }
      box.append(row);
    }
  }

  // Who made ply p, in words: "White · you", "Black · Caligo (Obscuro, 1 s per move)".
  moverName(p) {
    const d = this.data;
    if (p.mover === d.human) return cap(p.mover) + " · you";
    return cap(p.mover) + " · " + (p.mover === "white" ? d.white : d.black);
  }

  renderDiag(p) {
    const box = $("rv-diag");
    box.innerHTML = "";
    if (!p) {
      box.append(el("h3", { text: "Start position" }),
        el("p", { class: "muted", text: "Step with ← and →, Home and End, or click a move." }));
      return;
    }
    const number = Math.ceil(p.ply / 2) + (p.mover === "white" ? ". " : "… ");
    box.append(el("h3", { text: number + p.san + " · " + this.moverName(p) }));
    const clocks = p.clocks[0] != null
      ? " Clocks after the move: White " + clockText(p.clocks[0]) + ", Black " + clockText(p.clocks[1]) + "."
      : "";
    const d = p.engine;
    const engineMove = d && p.mover !== this.data.human;
    if (!engineMove) {
      box.append(el("p", { class: "muted", text: "Thought for " + seconds(p.elapsed_ms) + "." + clocks }));
      if (!d) box.append(el("p", { class: "muted", text: "No engine analysis for this move." }));
      return;
    }
    const name = p.mover === "white" ? this.data.white : this.data.black;
    const engine = /^Caligo\b/.test(name) ? "Caligo" : name;
    if (d.value != null && isFinite(d.value)) {
      const pct = Math.round(Math.max(0, Math.min(1, (1 + Number(d.value)) / 2)) * 100);
      const bar = el("span", { class: "fill " + p.mover });
      bar.style.width = pct + "%";
      box.append(el("div", { class: "eval", title: "the engine's value " + Number(d.value).toFixed(3) +
                               " on a scale from −1 (loss) to +1 (win), shown as (1 + value) / 2" },
        el("div", { class: "eval-text", text: engine + " (" + cap(p.mover) + "): " + pct + "% to win" }),
        el("div", { class: "eval-track" }, bar)));
    }
    const i = d.info || {};
    const belief = i.belief != null ? i.belief : i.belief_size;
    const words = [];
    if (belief != null) words.push("considered " + roughly(belief) + " possible position" + (belief === 1 ? "" : "s") + " of the board it could not see");
    if (i.nodes != null) words.push("searched " + roughly(i.nodes) + " positions of the game tree");
    words.push("thought for " + seconds(p.elapsed_ms));
    const sentence = engine + " " + words.join(", ").replace(/, ([^,]*)$/, " and $1") + ".";
    box.append(el("p", { class: "facts", text: sentence }), el("p", { class: "muted", text: clocks.trim() }));
    if (d.policy) {
      box.append(el("h4", { text: "Its top moves (how often it would play each)" }));
      const list = el("div", { class: "policy" });
      for (const [uci, prob, san] of d.policy) {
        const bar = el("span", { class: "bar" });
        bar.style.width = Math.max(1, prob * 100) + "%";
        list.append(el("div", { class: "prow" + (uci === p.uci ? " played" : ""), title: uci },
          el("span", { class: "uci", text: san || uci }), el("span", { class: "track" }, bar),
          el("span", { class: "pct", text: (prob * 100).toFixed(1) + "%" })));
      }
      box.append(list);
      if (d.policy_size > d.policy.length) {
        box.append(el("p", { class: "muted small", text: "the top " + d.policy.length + " of " + d.policy_size + " moves; the played move in green" }));
      }
    }
    const raw = Object.entries(i);
    if (d.value != null && !("value" in i)) raw.unshift(["value", d.value]);
    if (!raw.length) return;
    const details = el("details", { class: "raw" }, el("summary", { text: "Details" }));
    const dl = el("dl", { class: "info" });
    for (const [k, v] of raw) {
      dl.append(el("dt", { text: k }), el("dd", { text: typeof v === "object" ? JSON.stringify(v) : String(v) }));
    }
    details.append(dl);
    box.append(details);
  }
}

// |P| in words: "|P| = 18,634 possible positions; the picture counts a uniform sample of 4,096
// of them." P may itself be a capped sample of the consistent positions (then `seen` says how
// many there were: exactly, at least, or about).
function beliefSize(pic) {
  const fmt = (x) => Number(x).toLocaleString("en-US");
  let text;
  if (pic.size_kind === "redrawn") {
    text = "P was lost and drawn afresh from this observation alone: " + fmt(pic.size) + " guessed positions";
  } else if (pic.exact || pic.seen === pic.size) {
    text = "|P| = " + fmt(pic.size) + " possible position" + (pic.size === 1 ? "" : "s");
  } else {
    const rel = { "lower bound": "at least ", estimate: "about " }[pic.size_kind] || "";
    text = "|P| = " + rel + fmt(pic.seen) + " possible positions, of which it kept a uniform sample of " + fmt(pic.size);
  }
  if (pic.sample < pic.size) text += "; the picture counts a uniform sample of " + fmt(pic.sample) + " of them.";
  else text += pic.size > 1 ? ", every one counted." : ": it knew the position.";
  return text;
}

async function openReview(id) {
  show("review");
  const r = await fetch("/api/games/" + id);
  if (r.status === 409) return showError("Game " + id + " is still being played: nothing is revealed before it ends.");
  if (!r.ok) return showError("No game " + id + ".");
  review = new Review(await r.json());
}

document.addEventListener("keydown", (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const typing = e.target.tagName === "INPUT" && e.target.type === "text";
  if (typing) return;
  const steps = { ArrowLeft: -1, ArrowRight: 1 };
  let target = null;
  if (review) target = { at: review.ply, n: review.data.plies.length, go: (p) => review.go(p) };
  else if (live && live.reveal) target = { at: live.cursor, n: live.reveal.plies.length, go: (p) => live.go(p) };
  if (target) {
    if (e.target.tagName === "INPUT" && !(e.key in steps)) return;
    if (e.key in steps) { target.go(target.at + steps[e.key]); e.preventDefault(); }
    else if (e.key === "Home" || e.key === "ArrowUp") { target.go(0); e.preventDefault(); }
    else if (e.key === "End" || e.key === "ArrowDown") { target.go(target.n); e.preventDefault(); }
  }
  if (live && (e.key === "f" || e.key === "F") && e.target.tagName !== "INPUT") live.flip();
});

// --- wiring ----------------------------------------------------------------------------------

for (const b of $("color-choices").children) {
  b.addEventListener("click", () => {
    choice.color = b.dataset.color;
    for (const x of $("color-choices").children) x.classList.toggle("on", x === b);
  });
}
$("start").addEventListener("click", startGame);
$("sound").addEventListener("click", () => sound.toggle());
$("flip").addEventListener("click", () => { if (live) live.flip(); });
$("resign").addEventListener("click", () => {
  const b = $("resign");
  const label = b.querySelector(".btn-label");
  if (!live) return;
  if (b.classList.contains("confirm")) {
    b.classList.remove("confirm");
    label.textContent = " Resign";
    live.send({ type: "resign" });
    return;
  }
  b.classList.add("confirm");  // a second click within 3 s resigns
  label.textContent = " Really resign?";
  setTimeout(() => { b.classList.remove("confirm"); label.textContent = " Resign"; }, 3000);
});
$("abort").addEventListener("click", () => { if (live) live.send({ type: "abort" }); });
$("result-close").addEventListener("click", () => { $("result").hidden = true; });
for (const id of ["result-rematch", "after-rematch"]) $(id).addEventListener("click", () => { if (live) live.rematch(); });
$("st-first").addEventListener("click", () => { if (live) live.go(0); });
$("st-prev").addEventListener("click", () => { if (live) live.go(live.cursor - 1); });
$("st-next").addEventListener("click", () => { if (live) live.go(live.cursor + 1); });
$("st-last").addEventListener("click", () => { if (live && live.reveal) live.go(live.reveal.plies.length); });
$("st-view").addEventListener("click", () => { if (live) live.toggleView(); });
$("move-entry").addEventListener("submit", (e) => {
  e.preventDefault();
  if (live) live.typed($("move-input").value);
});
$("move-input").addEventListener("input", () => $("move-input").classList.remove("bad"));
$("move-input").addEventListener("keydown", (e) => {
  if (e.key === "Escape" && live) { $("move-input").value = ""; live.board.cancelPremove(); }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && live && e.target.tagName !== "INPUT") live.board.cancelPremove();
});
window.addEventListener("hashchange", route);
route();
