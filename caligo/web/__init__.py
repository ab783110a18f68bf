"""Play Caligo in the browser: a FastAPI app with a static page (docs/design.md, "The web app").

`create_app(WebConfig(db=..., agent=...), GuardConfig(...))` builds the app; `caligo web serve`
runs it on uvicorn (`transport.server_config`). Modules: `app` (the app and its error replies),
`routes/` (one router per resource, and their dependencies), `schemas` (request bodies and
WebSocket frames), `config` (settings, limits, engine names), `hub` (every live game and their
admission), `live` (one live game's driver), `store` (the web's own tables), `seat_view` (the
frames a seat is shown, from `project()` only), `reveal` (truth after the game), `pieces`
(vector pieces), `admission` (origins, JSON bodies, rates per client), `guard` (hosts, security
headers, bounded bodies), `transport` (connections under uvicorn), `static/` (the page). See
docs/web.md.
"""

from caligo.web.app import create_app
from caligo.web.config import WebConfig
from caligo.web.guard import GuardConfig
from caligo.web.hub import GameHub
from caligo.web.schemas import GameRequest

__all__ = ["GameHub", "GameRequest", "GuardConfig", "WebConfig", "create_app"]
