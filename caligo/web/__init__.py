"""Play Caligo in the browser: a FastAPI app with a static page (docs/design.md, "The web app").

`create_app(WebConfig(db=..., agent=...))` builds the app; `caligo web serve` runs it on uvicorn.
Modules: `app` (routes), `live` (live games, engine threads, storage of web games), `seat_view`
(the frames a seat is shown, from `project()` only), `reveal` (truth after the game), `pieces`
(vector pieces), `static/` (the page). See docs/web.md.
"""

from caligo.web.app import create_app
from caligo.web.live import GameHub, GameRequest, WebConfig

__all__ = ["GameHub", "GameRequest", "WebConfig", "create_app"]
