"""mm-spurious-*: the untrained control compares equal networks (the init depends on the seed only), and Table 1's
entries are shown as printed."""

import featlab
from featlab.papers.midpoint_mixup.spurious import PAPER_TABLE1, paper_cell


def test_untrained_control_gives_every_method_the_same_network(out):
    rec = featlab.run("mm-spurious-digits", "quick", out=out, quiet=True, control="untrained", seeds=1)
    assert rec.ok and rec.config["epochs"] == 0
    m = rec.summary["metrics"]
    assert m["mixup.test_err"] == m["midpoint.test_err"] == m["erm.test_err"] > 0.5  # near chance (0.9)
    assert [c["holds"] for c in rec.claims] == [False, False]  # strict '<' fails on a tie


def test_table1_entries_as_printed():
    assert paper_cell(PAPER_TABLE1["fashionmnist"]["mixup"]) == "9.66 ± ?"  # Table 1 prints no ± there
    assert paper_cell(PAPER_TABLE1["cifar100"]["erm"]) == "69.28 ± 2"
