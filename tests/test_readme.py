"""The README's Python example of the building blocks runs as written."""

import re
from pathlib import Path


def test_readme_building_blocks_example_runs():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    example = next(b for b in blocks if "EnsembleTwoLayer.init" in b)
    scope: dict = {}
    exec(compile(example, "README.md", "exec"), scope)
    assert scope["fooled"].shape == (4, 1000)
    cos = scope["cosine_matrix"](scope["dist"].mu, scope["net"].W).mean(0)
    assert cos[:5, :5].min() > 0.35  # the trained net averages: Fig 2a's in-class block
