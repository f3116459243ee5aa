"""The ``featlab`` command: list, run, show, reproduce."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .config import parse_overrides
from .errors import FeatlabError
from .utils import silence_stdout
from .runs.registry import get_experiment, list_experiments, paper_results, papers
from .runs.runner import run
from .report.tables import claims_markdown, declared_claims_rows, run_report, table
from . import __version__, cli_inspect, cli_report

# commands that live in their own modules (keeps this file small)
_MORE = {"config": cli_inspect.cmd_config, "runs": cli_inspect.cmd_runs, "compare": cli_inspect.cmd_compare,
         "report": cli_report.cmd_report}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="featlab", description="Reproduce and check feature-learning theory papers.")
    p.add_argument("--version", action="version", version=f"featlab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    sub.add_parser("list", help="every experiment with its paper reference").add_argument(
        "--json", action="store_true", help="print JSON instead of a table")

    c = sub.add_parser("claims", help="every claim an experiment judges: statement, source, threshold and why")
    c.add_argument("id", nargs="?", help="one experiment (default: all)")
    c.add_argument("--markdown", action="store_true", help="print docs/claims.md instead of a table")

    r = sub.add_parser("run", help="run one experiment")
    r.add_argument("id")
    r.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. seeds=8 k=20")
    _common(r)
    r.add_argument("--config", metavar="FILE.yaml", help="YAML file of field: value (applied before key=value)")
    r.add_argument("--control", action="store_true",
                   help="run every control setting, where the paper's statements should be false (no claim it "
                   "targets may hold); --control-name picks one")
    r.add_argument("--control-name", metavar="NAME", help="run only this control (see 'featlab claims ID')")
    r.add_argument("--print-config", action="store_true", help="print the effective config as YAML and exit")

    s = sub.add_parser("show", help="reprint a finished run's claims and headline metrics")
    s.add_argument("run_dir", metavar="EXP|RUN", help="an experiment id (its latest run), a run folder or a run id")
    s.add_argument("--out", default="runs", help="where experiment and run ids are looked up (default ./runs)")
    s.add_argument("--json", action="store_true", help="print the run's summary as JSON")

    rp = sub.add_parser("reproduce", help="every experiment of a paper, then a short summary and a report page")
    rp.add_argument("paper", nargs="?", default="all", help=f"one of {', '.join(papers())} or all (default)")
    rp.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides for the experiments "
                    "that have the field, e.g. data_root=~/data")
    _common(rp)

    d = sub.add_parser("data", help="image datasets: 'featlab data check [--root DIR]' lists what is present and valid")
    dsub = d.add_subparsers(dest="data_cmd", required=True)
    dc = dsub.add_parser("check", help="verify every dataset file under the data root against its checksum")
    dc.add_argument("--root", default="data", help="data root in torchvision's layout (default ./data)")

    em = sub.add_parser("embed", help="CLIP ViT-B-32 embeddings of CIFAR-10 for fa-embeddings (needs open_clip)")
    em.add_argument("--root", default="data", help="data root holding CIFAR-10 (default ./data)")
    em.add_argument("--out", default="cifar10_clip_vitb32.npz", help="output .npz or .parquet")
    em.add_argument("--pretrained", default="openai", help="open_clip pretrained tag or a local checkpoint file")
    em.add_argument("--device", default="auto", help="auto, cpu or cuda")
    em.add_argument("--batch-size", type=int, default=256)

    sw = sub.add_parser("sweep", help="the cartesian product of config values, each point a cached run")
    sw.add_argument("id")
    sw.add_argument("axes", nargs="*", metavar="key=v1,v2", help="e.g. k=10,20,40 eta=1e-3,1e-4")
    _common(sw)
    sw.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="local (default), ray (a Ray cluster) or slurm (jobs through submitit)")
    sw.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start one)")
    sw.add_argument("--cpus-per-point", type=float, default=None, metavar="N",
                    help="CPUs each Ray task / SLURM job asks for and uses as torch threads (default 1)")
    sw.add_argument("--gpus-per-point", type=float, default=None, metavar="N",
                    help="GPUs each point asks for (default: 1 when its device is cuda, or auto on a GPU cluster)")
    sw.add_argument("--shared-fs", action="store_true",
                    help="workers write into --out themselves (default: they ship each record back to this one)")
    sw.add_argument("--slurm-partition", default=None, help="SLURM partition of the jobs")
    sw.add_argument("--slurm-time", type=int, default=None, metavar="MIN", help="SLURM time limit per job, minutes")
    sw.add_argument("--show", default="", metavar="M1,M2", help="metrics to print (default: the first few)")
    sw.add_argument("--plot", nargs="+", metavar="x=AXIS", help="x=AXIS y=METRIC [hue=AXIS] [kind=line|heatmap]: "
                    "a PNG beside the table")
    cli_inspect.add_commands(sub)
    cli_report.add_commands(sub)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="quick", help="quick (CPU, about a minute per experiment; default) or paper")
    p.add_argument("--out", default="runs", help="output folder (default ./runs)")
    p.add_argument("--force", action="store_true", help="retrain even if an identical complete run exists")
    p.add_argument("--strict", action="store_true", help="exit 1 when a claim does not hold")


def cmd_list() -> int:
    rows = [[e.id, e.paper, e.reference, "/".join(e.presets), e.summary] for e in list_experiments()]
    print(table(rows, ["id", "paper", "figure/table", "presets", "what it shows"], [22, 21, 22, 12, 60]))
    return 0


def cmd_claims(a) -> int:
    exps = [get_experiment(a.id)] if a.id else list_experiments()
    if a.markdown:
        print(claims_markdown(exps, papers(), {k: paper_results(k) for k in papers()}))
        return 0
    rows = declared_claims_rows(exps)
    print(table(rows, ["experiment", "id", "statement", "paper", "threshold", "why"], [18, 24, 40, 14, 22, 44]))
    print(f"\n{len(rows)} claims in {len(exps)} experiment{'s' if len(exps) != 1 else ''}.")
    return 0


def _print_run(rec, out=None) -> None:
    out = out or sys.stdout
    if rec.skipped:
        print(f"(an identical complete run exists; not retrained — use --force to retrain)", file=out)
    print(run_report(rec.summary, str(rec.dir)), file=out)


def cmd_run(a) -> int:
    overrides = parse_overrides(a.overrides)
    if a.print_config:
        return cli_inspect.print_config(a, overrides)
    if a.control or a.control_name:
        return _run_controls(a, overrides)
    rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, **overrides)
    _print_run(rec)
    if rec.status != "complete":
        return 1
    return 1 if a.strict and not all(c["holds"] for c in rec.claims) else 0


def _run_controls(a, overrides) -> int:
    """Each control in turn (or the one named): exit 1 when a run fails or a targeted claim holds."""
    exp = get_experiment(a.id)
    chosen = [exp.control(a.control_name)] if a.control_name else [exp.control(c.name) for c in exp.controls]
    code = 0
    for ctl in chosen:
        rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, control=ctl.name, **overrides)
        _print_run(rec)
        targets = set(ctl.targets(exp.claims))
        held = [c["id"] for c in rec.claims if c["holds"] and c["id"] in targets]
        judged = sum(c["id"] in targets for c in rec.claims)
        print(f"\ncontrol {ctl.name!r} ({ctl.why}): {len(held)}/{judged} claims hold; none may"
              + (f" — a defect: {', '.join(held)}" if held else ""))
        code = max(code, 1 if rec.status != "complete" or held else 0)
    return code


def cmd_show(a) -> int:
    return cli_inspect.cmd_show(a)  # an experiment id (its latest run), a run folder or a run id


def cmd_reproduce(a) -> int:
    return cli_report.cmd_reproduce(a)  # goes on past an experiment that cannot run; ends with a report page


def cmd_sweep(a) -> int:
    return cli_report.cmd_sweep(a)


def cmd_data_check(a) -> int:
    from .data.images import SPECS, check_root, where_to_get

    root = Path(a.root or "data").expanduser()
    rows = check_root(root)
    print(f"data root: {root}")
    print(table([list(r) for r in rows], ["dataset", "status", "detail"], [13, 8, 80]))
    hints = [f"  {n}: {where_to_get(SPECS[n], root)}" for n, s, _ in rows if s != "ok"]
    if hints:
        print("\nwhere to get the others:")
        print("\n".join(hints))
    return 0 if all(s != "corrupt" for _, s, _ in rows) else 1


def cmd_embed(a) -> int:
    from .data.embeddings import clip_embeddings, require_open_clip, save_embeddings
    from .data.images import load_images

    require_open_clip()  # before reading the images
    z, y, is_test = clip_embeddings(load_images("cifar10", a.root), a.pretrained, a.device, a.batch_size)
    dest = save_embeddings(a.out, z, y, is_test)
    print(f"wrote {len(z)} CLIP ViT-B-32 embeddings ({z.shape[1]}-d) to {dest}")
    return 0


def _dispatch(argv: list[str] | None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # key=value may come after options
    if extra and (args.cmd not in ("run", "sweep", "reproduce")
                  or any(e.startswith("-") or "=" not in e for e in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra and args.cmd in ("run", "reproduce"):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        args.axes = [*args.axes, *extra]
    try:
        if args.cmd == "list":
            return cli_inspect.cmd_list_json() if args.json else cmd_list()
        if args.cmd in _MORE:
            return _MORE[args.cmd](args)
        if args.cmd == "claims":
            return cmd_claims(args)
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "show":
            return cmd_show(args)
        if args.cmd == "sweep":
            return cmd_sweep(args)
        if args.cmd == "data":
            return cmd_data_check(args)
        if args.cmd == "embed":
            return cmd_embed(args)
        return cmd_reproduce(args)
    except FeatlabError as e:
        print(f"featlab: error: {' '.join(str(e).split())}", file=sys.stderr)  # one line, whatever the message
        return 2
    except KeyboardInterrupt:
        print("featlab: interrupted; completed runs are kept, the unfinished one will be redone", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None) -> int:
    code = 141  # 128 + SIGPIPE, as a tool killed by a closed pipe, if the pipe closes before the outcome is known
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe (`featlab list | head -1`) is then handled below
        return code
    except BrokenPipeError:  # the reader left: end quietly, no traceback, nothing more on the closed pipe
        silence_stdout()
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
