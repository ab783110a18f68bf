"""Ray backend: the same fixed-seed match gives identical results locally and on a local Ray
instance (issue 8), and an SPRT stop cancels pending pairs. Skipped, with the reason shown,
where the optional extra is absent (`pip install 'caligo[ray]'`; CI installs it).

Expected values: the local run of the same match (the match seed fixes every game).
"""

from __future__ import annotations

import dataclasses
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip(
    "ray", reason="optional Ray extra not installed: pip install 'caligo[ray]'"
)

from caligo.fow.notation import read_pgns  # noqa: E402
from caligo.play.match import Backend, MatchConfig, Outputs, engine_configs  # noqa: E402
from caligo.play.runner import run_match  # noqa: E402
from caligo.play.stats import SprtConfig, SprtDecision  # noqa: E402

FAKE = Path(__file__).with_name("fake_engine.py")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (the backend leaves an instance it did not start)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_an_unreachable_cluster_is_an_error_before_ray_retries(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`caligo match --backend ray --address` to a port nobody listens on: a one-line error
    naming the address, not Ray's two minutes of retries (a closed port refuses at once)."""
    from caligo.cli import main

    # it runs before the tests that start `local_ray` (file order): with an instance up, the
    # backend would join it and never use the address
    assert not ray.is_initialized(), "a Ray instance is up: run this test before `local_ray`'s"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    argv = ["match", "--engine", "random", "--engine", "random", "--rounds", "1",
            "--backend", "ray", "--address", f"127.0.0.1:{port}"]
    assert main(argv) == 2
    assert f"Ray address '127.0.0.1:{port}' does not answer" in capsys.readouterr().err


def test_ray_matches_local_and_sprt_cancels(tmp_path: Path, local_ray: None) -> None:
    local_cfg = MatchConfig(engine_configs(["random", "random:seed=4"], []), rounds=4, seed=11)
    ray_cfg = dataclasses.replace(local_cfg, backend=Backend.RAY, concurrency=2)
    assert ray_cfg.match_id == local_cfg.match_id  # the backend is not part of the experiment
    local = run_match(local_cfg, Outputs(pgn=tmp_path / "local.pgn"))
    remote = run_match(ray_cfg, Outputs(pgn=tmp_path / "ray.pgn"))
    assert remote.tally == local.tally
    by_round = {
        g.headers["Round"]: g.moves for g in read_pgns((tmp_path / "local.pgn").read_text())
    }
    for game in read_pgns((tmp_path / "ray.pgn").read_text()):
        assert game.moves == by_round[game.headers["Round"]]
    # an engine that resigns at once loses every game: SPRT accepts H1 after a few pairs and
    # the pairs still queued on the actors are cancelled
    resigner = f"cmd:{sys.executable} {FAKE} resign 1"
    sprt_cfg = MatchConfig(
        engine_configs(["random", resigner], []),
        rounds=200,
        concurrency=2,
        sprt=SprtConfig(0, 200),
        backend=Backend.RAY,
    )
    result = run_match(sprt_cfg)
    assert result.sprt is not None and result.sprt.decision is SprtDecision.H1
    assert result.stopped_early and result.tally.pairs < 200
    assert result.tally.losses == 0


def test_an_actor_reserves_the_cpus_of_its_pair(local_ray: None) -> None:
    """`--cpus-per-pair 2` on a 2-CPU instance: the one actor holds both CPUs (Ray's own
    resource accounting), so a second pair of multi-threaded engines would not share them."""
    from caligo.play.backends import RayBackend
    from caligo.play.errors import MatchConfigError

    backend = RayBackend(1, cpus=2)
    try:
        ray.get([a.__ray_ready__.remote() for a in backend._actors])
        assert ray.available_resources().get("CPU", 0.0) == 0.0
    finally:
        backend.close()
    with pytest.raises(MatchConfigError, match="no node of the Ray cluster has that many CPUs "
                       r"\(the largest has 2\)"):
        RayBackend(1, cpus=3)
    with pytest.raises(MatchConfigError, match="a Ray reservation"):
        MatchConfig(engine_configs(["random", "random:seed=4"], []), rounds=1, cpus_per_pair=2)
    with pytest.raises(MatchConfigError, match="cpus per pair must be a positive integer, got 0"):
        MatchConfig(engine_configs(["random", "random:seed=4"], []), rounds=1, cpus_per_pair=0)

