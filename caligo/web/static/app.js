// Caligo web page: lobby, live game over a WebSocket, post-game review. No framework, no CDN.
// During a game everything shown comes from the server's `state` frames, which the server builds
// from the player's own observations; the true board appears only in the review, after the end.
"use strict";

const { Board, fenPieces, pieceImage } = window.CaligoBoard;
const $ = (id) => document.getElementById(id);

const TC_KINDS = { "60+2": "Bullet", "180+2": "Blitz", "300+0": "Blitz" };
const STRENGTH_LABELS = {
  "mt=0.2": "0.2 s / move", "mt=1": "1 s / move", "mt=3": "3 s / move",
  "iters=1000": "1,000 iterations", "iters=4000": "4,000 iterations",
};
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
  },
  current() { return localStorage.getItem("caligo.current"); },
  done(id) { if (this.current() === id) localStorage.removeItem("caligo.current"); },
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
}

function showError(text) {
  $("error-text").textContent = text;
  show("error");
}

// "180+2" (seconds, as the server writes it) -> "3+2" (minutes + seconds, as players say it).
function tcLabel(tc) {
  const m = /^(\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?)$/.exec(tc || "");
  if (!m) return tc === "none" ? "untimed" : tc;
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

// --- sound (Web Audio tones, no files) -------------------------------------------------------

const sound = {
  ctx: null,
  on() { return localStorage.getItem("caligo.sound") !== "off"; },
  toggle() {
    localStorage.setItem("caligo.sound", this.on() ? "off" : "on");
    this.button();
  },
  button() {
    $("sound").textContent = this.on() ? "♪ On" : "♪ Off";
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

function choiceButtons(box, options, labels, key) {
  box.innerHTML = "";
  for (const value of options) {
    const b = el("button", { type: "button", text: labels(value) });
    b.dataset[key] = value;
    if (choice[key] === value) b.classList.add("on");
    b.addEventListener("click", () => {
      choice[key] = value;
      for (const x of box.children) x.classList.toggle("on", x === b);
    });
    box.append(b);
  }
}

function gamesTable(box, games) {
  box.innerHTML = "";
  if (!games.length) { box.append(el("p", { class: "muted", text: "No finished game yet." })); return; }
  const table = el("table", { class: "game-list" });
  table.append(el("tr", {}, el("th", { text: "Date" }), el("th", { text: "White" }),
    el("th", { text: "Black" }), el("th", { text: "Result" }), el("th", { text: "Ending" }),
    el("th", { text: "Time" }), el("th")));
  for (const g of games) {
    table.append(el("tr", { "data-game": g.id },
      el("td", { text: (g.created || "").replace("T", " ").slice(0, 16) }),
      el("td", { text: g.white }), el("td", { text: g.black }),
      el("td", { class: "res", text: g.result }), el("td", { text: g.termination }),
      el("td", { text: tcLabel(g.tc) }),
      el("td", {}, el("a", { href: "#/review/" + g.id, text: "Review" }))));
  }
  box.append(table);
}

async function openLobby() {
  show("lobby");
  try {
    if (!info) info = await (await fetch("/api/info")).json();
  } catch (e) { return showError("The server does not answer."); }
  const tcNames = {};
  for (const t of info.time_controls) tcNames[t.tc] = t.label + (TC_KINDS[t.tc] ? " · " + TC_KINDS[t.tc] : "");
  choiceButtons($("tc-choices"), info.time_controls.map((t) => t.tc), (v) => tcNames[v], "tc");
  choiceButtons($("strength-choices"), info.strengths, (v) => STRENGTH_LABELS[v] || v, "strength");
  for (const b of $("color-choices").children) b.classList.toggle("on", b.dataset.color === choice.color);
  $("engine-note").textContent = "Engine: " + info.engine + (info.description ? ": " + info.description : "");
  const current = seats.current();
  $("resume").hidden = !current;
  if (current) $("resume-btn").onclick = () => { location.hash = "#/game/" + current; };
  $("lobby-error").hidden = true;
  const games = await (await fetch("/api/games?limit=8")).json();
  gamesTable($("lobby-games"), games);
}

async function startGame() {
  const button = $("start");
  button.disabled = true;
  try {
    const r = await fetch("/api/games", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ color: choice.color, tc: choice.tc, strength: choice.strength }),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    seats.put(body.game, body.seat);
    location.hash = "#/game/" + body.game;
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
    this.board = new Board($("board"), {
      onMove: (uci) => this.move(uci),
      promotion: (from, to, moves, done) => this.promote(to, moves, done),
    });
    this.timer = setInterval(() => this.tick(), 100);
    $("result").hidden = true;
    $("result").onclick = (e) => { if (e.target === $("result")) $("result").hidden = true; };
    $("promotion").hidden = true;
    $("moves").innerHTML = "";
    $("status").textContent = "Connecting…";
    this.connect();
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const url = proto + "://" + location.host + "/ws/games/" + this.id + "?seat=" + encodeURIComponent(this.token);
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => { this.delay = 500; };
    ws.onmessage = (ev) => {
      const f = JSON.parse(ev.data);
      if (f.type === "state") this.onState(f);
      else if (f.type === "error") this.onError(f);
    };
    ws.onclose = (ev) => {
      if (this.closed || ws !== this.ws) return;
      if (ev.code === 4403) return;
      if (this.state && this.state.status === "over") return;
      this.setStatus("Connection lost, reconnecting…", "warn");
      setTimeout(() => { if (!this.closed) this.connect(); }, this.delay);
      this.delay = Math.min(this.delay * 2, 4000);
    };
  }

  close() {
    this.closed = true;
    clearInterval(this.timer);
    if (this.ws) this.ws.close();
  }

  move(uci) {
    this.send({ type: "move", uci, ply: this.state.ply });
    this.setStatus("Caligo is thinking…", "thinking");
    this.pending = true;
  }

  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
    else this.toast("Not connected: the move was not sent.");
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

  onState(f) {
    const prev = this.state;
    this.state = f;
    this.pending = false;
    this.recvAt = performance.now();
    const v = f.view;
    const hint = v.hints.own_last_move;
    this.board.set({
      orientation: f.color,
      pieces: v.pieces,
      fog: v.fog,
      legal: f.your_turn ? v.legal_moves : [],
      lastMove: hint ? [hint.slice(0, 2), hint.slice(2, 4)] : null,
      lost: v.hints.lost,
      movable: f.color === "white" ? "w" : "b",
      interactive: f.your_turn,
    });
    const opp = f.color === "white" ? "black" : "white";
    $("name-bottom").replaceChildren(el("span", { class: "dot " + f.color, title: f.color }), "You");
    $("name-top").replaceChildren(el("span", { class: "dot " + opp, title: opp }), f.opponent);
    this.renderMoves(f);
    this.renderTally(f);
    this.tick();
    if (f.status === "over") this.onEnd(f, prev);
    else if (f.your_turn) this.setStatus("Your move", "turn");
    else this.setStatus("Caligo is thinking…", "thinking");
    $("resign").hidden = f.status === "over";
    $("after-review").hidden = $("after-new").hidden = f.status !== "over";
    $("after-review").href = "#/review/" + this.id;
    $("abort").hidden = f.status === "over" || f.ply >= 2;
    document.title = (f.your_turn ? "▶ Your move · " : "") + "Caligo · Fog of War";
    if (prev && f.ply > prev.ply) {
      const last = f.moves[f.moves.length - 1];
      if (last && last.san) sound.play(last.san.includes("x") ? "capture" : "move");
      else sound.play(v.hints.lost.length ? "lost" : "opponent");
    }
  }

  onEnd(f, prev) {
    seats.done(this.id);
    const e = f.end;
    let title = "Draw";
    if (e.result === "*") title = "Game aborted";
    else if (e.winner === f.color) title = "You won";
    else if (e.winner) title = "You lost";
    const text = RESULT_TEXT[e.result] + " · " + e.termination + (f.detail ? " (" + f.detail + ")" : "");
    this.setStatus(title + ": " + text, "over");
    $("result-title").textContent = title;
    $("result-text").textContent = text;
    $("result-review").href = "#/review/" + this.id;
    if (!prev || prev.status !== "over") {
      $("result").hidden = false;
      sound.play("end");
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
    $("tally-bottom").replaceChildren(row(m.captured, theirs, m.balance));
    $("tally-top").replaceChildren(row(m.lost, mine, -m.balance));
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
    const now = (color) => {
      let ms = c[color];
      if (f.status === "playing" && c.running === color) ms -= elapsed;
      return Math.max(0, ms);
    };
    const opp = f.color === "white" ? "black" : "white";
    for (const [node, color] of [[bottom, f.color], [top, opp]]) {
      const ms = now(color);
      node.textContent = clockText(ms);
      node.classList.toggle("running", f.status === "playing" && c.running === color);
      node.classList.toggle("low", ms < 20000);
    }
  }

  promote(to, moves, done) {
    const box = $("promotion");
    box.innerHTML = "";
    const white = this.state.color === "white";
    const file = "abcdefgh".indexOf(to[0]);
    const col = white ? file : 7 - file;
    box.style.left = col * 12.5 + "%";
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
    this.side = human;
    const range = $("rv-range");
    range.max = String(data.plies.length);
    range.oninput = () => this.go(Number(range.value));
    $("rv-first").onclick = () => this.go(0);
    $("rv-prev").onclick = () => this.go(this.ply - 1);
    $("rv-next").onclick = () => this.go(this.ply + 1);
    $("rv-last").onclick = () => this.go(data.plies.length);
    $("rv-flip").onclick = () => {
      this.side = this.side === "white" ? "black" : "white";
      this.go(this.ply);
    };
    const base = "/api/games/" + data.id;
    $("dl-pgn").href = base + "/pgn";
    $("dl-white").href = base + "/transcript/white";
    $("dl-black").href = base + "/transcript/black";
    const you = (c) => (data.human === c ? " (you)" : "");
    $("review-title").textContent = data.white + you("white") + " vs " + data.black + you("black");
    $("review-meta").textContent = data.result + " · " + RESULT_TEXT[data.result] + " by " +
      data.termination + (data.detail ? " (" + data.detail + ")" : "") + " · " +
      tcLabel(data.tc) + " · " + (data.created || "").replace("T", " ").slice(0, 16);
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

  renderDiag(p) {
    const box = $("rv-diag");
    box.innerHTML = "";
    if (!p) {
      box.append(el("p", { class: "muted", text: "Start position. Step with ← and →, Home and End." }));
      return;
    }
    const who = p.mover === this.data.human ? "You" : (p.mover === "white" ? this.data.white : this.data.black);
    box.append(el("h3", { text: "Ply " + p.ply + ": " + p.san + " (" + p.mover + ", " + who + ")" }));
    const facts = ["think time " + (p.elapsed_ms / 1000).toFixed(2) + " s"];
    if (p.clocks[0] != null) facts.push("clocks after: white " + clockText(p.clocks[0]) + ", black " + clockText(p.clocks[1]));
    box.append(el("p", { class: "muted", text: facts.join(" · ") }));
    const d = p.engine;
    if (!d) {
      box.append(el("p", { class: "muted", text: "No engine diagnostics for this move." }));
      return;
    }
    if (d.value != null) box.append(el("p", { text: "Engine value: " + (d.value >= 0 ? "+" : "") + Number(d.value).toFixed(3) }));
    if (d.info) {
      const dl = el("dl", { class: "info" });
      for (const [k, v] of Object.entries(d.info)) dl.append(el("dt", { text: k }), el("dd", { text: typeof v === "object" ? JSON.stringify(v) : String(v) }));
      box.append(dl);
    }
    if (d.policy) {
      box.append(el("p", { class: "muted", text: "Policy (top " + d.policy.length + " of " + d.policy_size + " moves)" }));
      const list = el("div", { class: "policy" });
      for (const [uci, prob] of d.policy) {
        const bar = el("span", { class: "bar" });
        bar.style.width = Math.max(1, prob * 100) + "%";
        list.append(el("div", { class: "prow" + (uci === p.uci ? " played" : "") },
          el("span", { class: "uci", text: uci }), el("span", { class: "track" }, bar),
          el("span", { class: "pct", text: (prob * 100).toFixed(1) + "%" })));
      }
      box.append(list);
    }
  }
}

async function openReview(id) {
  show("review");
  const r = await fetch("/api/games/" + id);
  if (r.status === 409) return showError("Game " + id + " is still being played: nothing is revealed before it ends.");
  if (!r.ok) return showError("No game " + id + ".");
  review = new Review(await r.json());
}

document.addEventListener("keydown", (e) => {
  if (!review || e.target.tagName === "INPUT" && e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
  const steps = { ArrowLeft: -1, ArrowRight: 1 };
  if (e.key in steps) { review.go(review.ply + steps[e.key]); e.preventDefault(); }
  else if (e.key === "Home" || e.key === "ArrowUp") { review.go(0); e.preventDefault(); }
  else if (e.key === "End" || e.key === "ArrowDown") { review.go(review.data.plies.length); e.preventDefault(); }
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
$("resign").addEventListener("click", () => {
  const b = $("resign");
  if (!live) return;
  if (b.classList.contains("confirm")) {
    b.classList.remove("confirm");
    b.textContent = "⚑ Resign";
    live.send({ type: "resign" });
    return;
  }
  b.classList.add("confirm");
  b.textContent = "Really resign?";
  setTimeout(() => { b.classList.remove("confirm"); b.textContent = "⚑ Resign"; }, 3000);
});
$("abort").addEventListener("click", () => { if (live) live.send({ type: "abort" }); });
window.addEventListener("hashchange", route);
route();
