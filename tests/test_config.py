import pytest

from featlab.cli import main
from featlab.config import parse_overrides
from featlab.errors import ConfigError
from featlab.runs.runner import resolve_config


def test_overrides_parse_yaml_scalars_and_lists():
    o = parse_overrides(["k=20", "eta=1e-4", "radii=[0, 2, 4]", "centres=basis", "shared_data=true"])
    assert o == {"k": 20, "eta": 1e-4, "radii": [0, 2, 4], "centres": "basis", "shared_data": True}
    _, cfg = resolve_config("fa-synthetic", "quick", overrides=o)
    assert cfg.eta == pytest.approx(1e-4) and cfg.k == 20 and cfg.radius_grid() == [0.0, 2.0, 4.0]


def test_on_off_words_stay_words_where_a_field_takes_them():
    """YAML 1.1 reads `off` and `on` as booleans; a field whose values are those words gets the words back (the GPU
    check's `autocast=off` was refused as a boolean), while a numeric field still refuses a boolean."""
    import featlab.papers  # noqa: F401  (registers the experiments)
    from featlab.runs.runner import resolve_config

    cfg = resolve_config("fa-resnet-digits", "quick", None, parse_overrides(["autocast=off", "channels_last=on"]),
                         False)[1]
    assert (cfg.autocast, cfg.channels_last) == ("off", "on")
    with pytest.raises(Exception, match="boolean"):
        resolve_config("fa-resnet-digits", "quick", None, parse_overrides(["epochs=off"]), False)


def test_default_radius_grid_is_the_papers_axis_scaled_with_d():
    _, cfg = resolve_config("fa-synthetic", "paper")
    assert cfg.radius_grid() == [float(r) for r in range(0, 59, 2)]
    _, big = resolve_config("fa-synthetic", "paper", overrides={"d": 4 * 3072})
    assert big.radius_grid()[-1] == 116.0 and big.radius_grid()[-1] > (big.d / 2) ** 0.5


def test_layers_apply_in_order(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("seeds: 7\nk: 12\n")
    _, cfg = resolve_config("fa-synthetic", "paper", f, {"k": 14})
    assert (cfg.seeds, cfg.k) == (7, 14)  # YAML over preset, CLI over YAML


@pytest.mark.parametrize("override, words", [
    ({"kk": 3}, ["unknown field 'kk'", "valid fields are", "seeds"]),
    ({"k": 1}, ["'k'", ">= 2", "got 1"]),
    ({"eta": 0}, ["'eta'", "> 0"]),
    ({"m": 0}, ["'m'", ">= 1"]),
    ({"n": 0}, ["'n'", ">= 1"]),
    ({"d": 5, "k": 10}, ["'d'", "orthogonal", "got d=5"]),
    ({"positive": []}, ["'positive'", "non-empty"]),
    ({"positive": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, ["'positive'", "J−"]),
    ({"positive": [10]}, ["'positive'", "0..9"]),
    ({"pairwise_cos": 1.0}, ["'pairwise_cos'", "< 1"]),
    ({"pairwise_cos": -0.1}, ["'pairwise_cos'", ">= 0"]),
    ({"centres": "sphere"}, ["'centres'", "qr", "basis"]),
    ({"radii": [-1, 2]}, ["'radii'", ">= 0"]),
    ({"seeds": "many"}, ["'seeds'", "integer"]),
])
def test_bad_config_names_the_field(override, words):
    with pytest.raises(ConfigError) as e:
        resolve_config("fa-synthetic", "quick", overrides=override)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.mark.parametrize("argv, words", [
    (["run", "fa-synthtic"], ["unknown experiment", "did you mean 'fa-synthetic'"]),
    (["run", "fa-synthetic", "k=1"], ["'k'"]),
    (["run", "fa-synthetic", "nokey"], ["key=value"]),
    (["run", "fa-synthetic", "--preset", "huge"], ["no preset 'huge'"]),
    (["run", "fa-synthetic", "--config", "/nonexistent/x.yaml"], ["does not exist"]),
    (["show", "/nonexistent/run"], ["/nonexistent/run", "featlab runs"]),
    (["run", "fa-ablation-n", "pgd_steps=3"], ["unknown field 'pgd_steps'", "values"]),  # a field it never reads
    (["claims", "fa-synthtic"], ["unknown experiment"]),
])
def test_cli_user_errors_exit_2_with_one_line(argv, words, capsys, tmp_path):
    assert main(argv + (["--out", str(tmp_path)] if argv[0] == "run" else [])) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("featlab: error:")
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def test_unreadable_yaml_exits_2(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("k: [1, 2\n")
    assert main(["run", "fa-synthetic", "--config", str(f), "--out", str(tmp_path)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    f.write_text("- 1\n- 2\n")
    assert main(["run", "fa-synthetic", "--config", str(f), "--out", str(tmp_path)]) == 2


def test_list_shows_every_experiment(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for eid in ["fa-synthetic", "fa-ablation-n", "fa-ablation-lr", "fa-ablation-init", "fa-ablation-snr",
                "fa-ablation-cosine"]:
        assert eid in out
    assert "Fig 2a/2b" in out
