"""No input can hang featlab: a config is loaded with a size cap and an alias budget (a 458-byte alias bomb is refused
at once), a refused tag is named as such, `1e9` is a number, pydantic's 'Input should be' reads 'must be', and a path
the OS refuses (a 300-character folder name) is one line, exit 2, on every command."""

import time

import pytest

from featlab.cli import main
from featlab.config import load_yaml, parse_overrides
from featlab.errors import ConfigError
from featlab.runs.runner import resolve_config

LONG = "a" * 300


def _bomb(levels: int) -> str:
    parts = ["&a0 [1,1,1,1,1,1,1,1,1,1]"] + [f"&a{i} [{','.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "seeds: [" + ", ".join(parts) + "]\n"


@pytest.mark.parametrize("text,words", [
    (_bomb(9), "holds more than 100,000 values"),
    ("seeds: &a [1, *a]\n", "refers to itself (a recursive alias)"),
    ("seeds: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 100 levels"),
    ("seeds: " + "[" * 400_000 + "]" * 400_000, "nested more than 100 levels"),
    ("seeds: [" + "1," * 600_000 + "1]\n", "larger than 1 MiB"),
    ("seeds: !!python/object:os.system {}\n", "uses the tag !!python/object:os.system, which featlab refuses"),
    ("seeds: !custom 3\n", "uses the tag !custom"),
])
def test_a_config_over_its_limits_is_refused_at_once(tmp_path, text, words):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    t = time.perf_counter()
    with pytest.raises(ConfigError, match="config file .*") as e:
        load_yaml(f)
    assert time.perf_counter() - t < 5 and words in str(e.value) and "not valid YAML" not in str(e.value)
    if "values" in words or "MiB" in words:
        assert "a config is small" in str(e.value)


def test_an_override_over_its_limits_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"the .seeds. value holds more than"):
        parse_overrides(["seeds=" + _bomb(8).split(": ", 1)[1]])
    with pytest.raises(ConfigError, match=r"the 'seeds' value uses the tag !!python/object"):
        parse_overrides(["seeds=!!python/object:os.system {}"])


def test_numbers_in_exponent_form_are_numbers_and_errors_read_must_be(tmp_path):
    assert parse_overrides(["steps=1e9", "eta=1e-4", "name=1e9x"]) == {"steps": 1e9, "eta": 1e-4, "name": "1e9x"}
    (tmp_path / "c.yaml").write_text("steps: 2e3\n")
    assert load_yaml(tmp_path / "c.yaml") == {"steps": 2000.0}
    with pytest.raises(ConfigError, match=r"the 'steps' field of rfa-fig1 must be a valid integer"):
        resolve_config("rfa-fig1", overrides={"steps": 1.5})


@pytest.mark.parametrize("argv", [
    ["run", "rfa-fig1", "--out", f"OUT/{LONG}"], ["report", f"OUT/{LONG}"], ["runs", f"OUT/{LONG}"],
    ["show", "rfa-fig1", "--out", f"OUT/{LONG}"], ["report", "OUT", "--out", f"OUT/{LONG}/r.html"],
    ["run", "rfa-fig1", "--config", f"OUT/{LONG}.yaml"], ["data", "check", "--root", f"OUT/{LONG}"],
])
def test_an_over_long_path_is_one_line_on_every_command(tmp_path, capsys, argv):
    (tmp_path / "OUT").mkdir()
    assert main([a.replace("OUT", str(tmp_path / "OUT")) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("featlab: error: ") and "Traceback" not in err[0], err
