"""`bendtorch study NAME [options]`: one study behind the findings (bendtorch.records.studies has the list), run with
its options; its result is written as OUT/NAME.json (with the command that made it, impl's source digest and the
machine record) and its figure beside it. The committed results are made with `--out reports/results/findings`.

    bendtorch study --help                     the studies
    bendtorch study adam_c2 --help             one study's options
    bendtorch study adam_c2 --seeds 2 --steps 3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from bendtorch.commands.args import UsageError, float_in, int_in, writable_dir

if TYPE_CHECKING:
    from bendtorch.records.studies import Option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bendtorch.records import paths, studies

    sub = parser.add_subparsers(dest="study", metavar="STUDY", title="studies")
    sub.required = True
    for st in studies.STUDIES:
        p = sub.add_parser(st.name, help=st.description, description=st.description)
        for o in st.options:
            kw: dict[str, Any] = {"dest": o.name, "default": o.default, "help": _help(o)}
            if o.kind == "flag":
                kw["action"] = "store_true"
            elif o.kind == "choice":
                kw["choices"] = o.choices
            elif o.kind == "int":
                kw["type"] = int_in(int(o.lo if o.lo is not None else -2**63), None if o.hi is None else int(o.hi))
            else:
                kw["type"] = float_in(-float("inf") if o.lo is None else o.lo,
                                      float("inf") if o.hi is None else o.hi, o.lo_open)
            if o.many:
                kw["nargs"] = "+"
            p.add_argument(o.flag, **kw)
        p.add_argument("--out", type=Path, default=paths.output_dir("study"),
                       help=f"folder for {st.result}" + (f" and {st.figure}" if st.figure else "")
                            + f" (default: {paths.output_dir('study')}; the committed results are in "
                              "reports/results/findings)")


def _help(o: Option) -> str:
    """The option's help with its default (argparse reads % as a format: doubled)."""
    text = o.help
    if o.kind != "flag" and o.default is not None:
        shown = " ".join(map(str, o.default)) if isinstance(o.default, tuple) else o.default
        text += f" (default {shown})"
    return text.replace("%", "%%")


def command(name: str, options: Mapping[str, Any]) -> str:
    """The command line that runs study `name` with these options, every option written out."""
    from bendtorch.records import studies

    words = ["bendtorch", "study", name]
    for o in studies.get(name).options:
        v = options[o.name]
        if v is None or v is False:
            continue
        words.append(o.flag)
        if v is not True:
            words += [str(x) for x in (v if o.many else (v,))]
    return " ".join(words)


def run_study(name: str, options: Mapping[str, Any], out: Path) -> dict[str, Any]:
    """Study `name` run with `options` (its options' names and values): the result, with the command, the options and
    impl's source digest when it started, written to out/<result> (schema_version and the machine record added by
    bendtorch.reference.findings.write_json) and its figure beside it."""
    from bendtorch.records import studies
    from bendtorch.records.machine import impl_digest
    from bendtorch.reference.findings import write_json

    st = studies.get(name)
    kw = dict(options)
    if st.progress:
        kw["progress"] = lambda line: print(line, file=sys.stderr, flush=True)
    fingerprint = impl_digest()
    result: dict[str, Any] = studies.resolve(st.run)(**kw)
    result.update(command=command(name, options), options=dict(options), impl_fingerprint=fingerprint)
    write_json(result, out / st.result)
    if st.plot is not None and st.figure is not None:
        studies.resolve(st.plot)(result, out / st.figure)
    return result


def run(args: argparse.Namespace) -> int:
    from bendtorch.records import durable, studies

    st = studies.get(args.study)
    options = {o.name: tuple(getattr(args, o.name)) if o.many else getattr(args, o.name) for o in st.options}
    out = writable_dir(args.out)
    try:
        durable.refuse_links(out, [st.result] + ([st.figure] if st.figure else []))
    except durable.OutputError as e:
        raise UsageError(str(e)) from None
    result = run_study(st.name, options, out)
    if st.text is not None:
        print(studies.resolve(st.text)(result))
    print(f"wrote {out / st.result}" + (f" and {out / st.figure}" if st.figure else ""))
    return 0
