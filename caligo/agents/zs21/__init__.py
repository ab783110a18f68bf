"""The ZS21 agent: the first dark chess agent (Zhang & Sandholm 2021, appendix D).

Nested depth-limited 1-KLSS with Reach and transposition merging (Algorithm 12), exact LP
solves of the trunk, iterative deepening with ZS21's move ordering, L = 200 particles, the
information-seeking term with M = 10^7 and the Maxmargin/Resolve switch (Algorithm 15), written
against `caligo.search`'s game interface so it runs on FoW chess and on any `TreeGame`.

- `config`: `ZS21Config`, `ZS21Budget`, the enums, `ZS21Result` (the root gadget's kind is the
  search's `caligo.search.config.RootGadget`);
- `subgame`: Algorithm 12 and lines 11-20 of Algorithm 15 on a search arena;
- `trunk_lp`: the trunk, exported by `caligo.search.export`, solved exactly by LP (HiGHS);
- `search`: `ZS21Search`, the decision loop and the expansion rules;
- `agent`: `ZS21Agent`, the FoW chess agent (registered as `zs21`), and `ZS21TreeAgent` with
  `zs21_exploitability` for small games.
"""

from caligo.agents.zs21.config import (
    Penalty,
    StartMode,
    ZS21Budget,
    ZS21Config,
    ZS21ConfigError,
    ZS21Error,
    ZS21Result,
)
from caligo.agents.zs21.search import ZS21Search

__all__ = [
    "Penalty",
    "StartMode",
    "ZS21Budget",
    "ZS21Config",
    "ZS21ConfigError",
    "ZS21Error",
    "ZS21Result",
    "ZS21Search",
]
