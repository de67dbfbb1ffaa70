"""``attnkit model``: the trained toy models — train one, show one, look inside one. Parsing
and printing only; the work is solutions.training's, solutions.attention_maps' and
exercises.render.model_page's."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from formats.textfile import terminal_safe

from .course_files import fail, positive
from .progress import Progress

TASKS = ("copy", "reverse", "sort")        # solutions.toy_tasks.TASKS (named here: --help stays fast)


def seed_number(text: str) -> int:
    """A seed: a whole number, at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


def _train(args) -> int:
    from solutions.training import RECIPES, train_and_save

    recipe = replace(RECIPES[args.task], **{k: v for k, v in (("steps", args.steps), ("seed", args.seed))
                                             if v is not None})
    out = Path(args.out)
    bar = Progress(recipe.steps, f"train {args.task}", enabled=None if not args.json else False)
    try:
        described = train_and_save(recipe, out / f"{args.task}.npz",
                                   lambda step, loss, accuracy: bar.advance(1, f"loss {loss:.4f} acc {accuracy:.3f}"))
    except OSError as err:
        return fail([f"{err.filename or out}: {err.strerror or err}"])
    finally:
        bar.close()
    if args.json:
        print(json.dumps(described, indent=2))
        return 0
    print(terminal_safe(f"trained {args.task} in {described['training_seconds']} s ({recipe.steps} steps): "
                        f"held-out exact match {100 * described['held_out_exact_match']:.1f} %"))
    print(terminal_safe(f"  weights: {out / (args.task + '.npz')} ({described['parameters']:,} parameters, "
                        f"{described['digest'][:19]}…)"))
    return 0


DESCRIBED = ("name", "recipe", "config", "parameters", "digest", "held_out_exact_match",
             "training_seconds", "command")        # what a model's .json holds (model train writes it)


def _open(name: str):
    """(model, described, recipe) of a model name or path, or an exit code and why on stderr."""
    from exercises.template.trained_models import known_models, model_path
    from solutions.checkpoint import load_model
    from solutions.toy_tasks import VOCAB
    from solutions.training import Recipe

    path = model_path(name)
    if not path.is_file():
        known = known_models()
        return fail([f"{name}: no such model ({path}); the bank's models: {', '.join(known) or 'none'}"])
    try:
        model, described = load_model(path)
        missing = [field for field in DESCRIBED if field not in described]
        if missing:
            return fail([f"{path}: not a trained toy model's description: no {', '.join(missing)}"])
        recipe = Recipe(**described["recipe"])
        recipe.toy_task()
    except (OSError, ValueError, KeyError, TypeError) as err:
        return fail([f"{path}: {err}"])
    if (model.config.src_vocab_size, model.config.tgt_vocab_size) != (VOCAB, VOCAB):
        return fail([f"{path}: a toy model reads and writes the {VOCAB} toy tokens, this one "
                     f"{model.config.src_vocab_size} and {model.config.tgt_vocab_size}"])
    return model, described, recipe


def _show(args) -> int:
    from solutions.training import exact_match

    opened = _open(args.name)
    if isinstance(opened, int):
        return opened
    model, described, recipe = opened
    shown = {**described, "held_out_exact_match_now": exact_match(model, recipe.toy_task())}
    if args.json:
        print(json.dumps(shown, indent=2))
        return 0
    c = described["config"]
    print(terminal_safe(f"{described['name']}: the {recipe.task} task on {recipe.min_len}–{recipe.max_len} digits"))
    print(f"  architecture: {c['num_encoder_layers']} encoder + {c['num_decoder_layers']} decoder layers, "
          f"d_model {c['d_model']}, {c['num_heads']} heads, d_ff {c['d_ff']}, vocabulary {c['src_vocab_size']}"
          f"{', tied output' if c.get('tie_output') else ''}")
    print(f"  parameters:   {described['parameters']:,}")
    print(f"  held-out exact match: {100 * shown['held_out_exact_match_now']:.1f} % "
          f"(recorded at training: {100 * described['held_out_exact_match']:.1f} %)")
    print(terminal_safe(f"  trained by:   {described['command']} ({described['training_seconds']} s)"))
    print(terminal_safe(f"  weights:      {described['digest']}"))
    return 0


def _attention(args) -> int:
    from solutions.attention_maps import attention_maps

    opened = _open(args.name)
    if isinstance(opened, int):
        return opened
    model, described, recipe = opened
    try:
        maps = attention_maps(model, recipe.toy_task(), args.input)
    except ValueError as err:
        return fail([str(err)])
    if args.html:
        from exercises.render.model_page import attention_page
        from formats.textfile import write_atomic
        try:
            write_atomic(Path(args.html), attention_page(described["name"], described, maps).encode("utf-8"))
        except OSError as err:
            return fail([f"{err.filename or args.html}: {err.strerror or err}"])
    print(terminal_safe(f"input:  {' '.join(maps.source)}\nanswer: {' '.join(maps.output)}"))
    for head in maps.maps:
        print(terminal_safe(f"\n{head.layer} {head.kind}-attention, head {head.head} "
                            f"(rows: {' '.join(head.rows)}; columns: {' '.join(head.cols)})"))
        for token, row in zip(head.rows, head.weights):
            print(terminal_safe(f"  {token:>5}  " + " ".join(f"{w:4.2f}" for w in row)))
    if args.html:
        print(terminal_safe(f"\npage: {args.html}"))
    return 0


def add_model_command(commands) -> None:
    model = commands.add_parser(
        "model", help="the trained toy models: train one, show one, see its attention",
        description="Mini encoder-decoders trained in NumPy on toy tasks (copy, reverse, sort a "
                    "string of digits), whose heads students look inside. The bank's models are "
                    "in problem_bank/models/.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  attnkit model train reverse --out models/\n  attnkit model show reverse\n"
               "  attnkit model attention reverse 31415 --html reverse.html")
    sub = model.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    train = sub.add_parser("train", help="train a model on a toy task (deterministic from its seed)",
                           description="Train the task's recipe with Adam; a progress bar shows "
                                       "the step, the loss and the token accuracy.")
    train.add_argument("task", choices=TASKS)
    train.add_argument("--out", metavar="DIR", required=True,
                       help="where to write TASK.npz and TASK.json (the bank's own models are in "
                            "problem_bank/models: give it to replace one)")
    train.add_argument("--steps", type=positive, help="Adam steps (default: the task's recipe)")
    train.add_argument("--seed", type=seed_number, help="the seed (default: the task's recipe, 0)")
    train.add_argument("--json", action="store_true", help="print what TASK.json holds")
    train.set_defaults(handler=_train, command="model train")
    show = sub.add_parser("show", help="architecture, parameter count, held-out accuracy",
                          description="A model's architecture, parameter count, recipe and digest, "
                                      "and its held-out exact match measured now.")
    show.add_argument("name", help="a bank model's name (copy, reverse, sort) or a model's .json/.npz path")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=_show, command="model show")
    attention = sub.add_parser("attention", help="every head's attention maps for one input",
                               description="Run the model on INPUT (digits) and print its answer and "
                                           "every head's attention weights: the encoder's self-"
                                           "attention, the decoder's self- and cross-attention.")
    attention.add_argument("name", help="a bank model's name or a model's .json/.npz path")
    attention.add_argument("input", help='the digits to give the model, e.g. "31415"')
    attention.add_argument("--html", metavar="PATH", help="also write the maps as heatmaps on an "
                                                          "offline page")
    attention.set_defaults(handler=_attention, command="model attention")
