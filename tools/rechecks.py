"""The re-checks behind `make rechecks`: re-runs too slow for a page, recorded for the pages.

Each chapter's re-check trains the page's models again with the package's own functions, at a
longer patience and on other splits and seeds, and evaluates the page's claims on every re-run
the way the page computes them. Only validation losses decide when a run stops; each re-run's
test split is scored once, after its models are trained. The results go to the chapter's record
(``transformer_lab.rechecks``: ``code/transformer_lab/recheck_records/<chapter>.json``), with the
recipe's fingerprint and the machine that made it; the page glues its numbers from there and
fails when the recipe has changed since.

    python tools/rechecks.py            # every chapter (ch3, ch4, ch6), one after another
    python tools/rechecks.py ch4 ch6    # some of them
    python tools/rechecks.py --check    # re-run, write nothing, exit 1 if a committed record's
                                        # recipe or results differ (CI, when the package, the
                                        # data or the lock changed)

What each re-check costs (one thread, canonical mode) is in its record ("wall_seconds").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime

import numpy as np

import transformer_lab  # noqa: F401  (first: the canonical numeric mode, before torch)
from machine import cpu_info
from transformer_lab.rechecks import (
    EXPERIMENTS,
    RERUN_COMMAND,
    StaleRecordError,
    fingerprint,
    load_record,
    recipe_changes,
    recipe_of,
    write_record,
)
from transformer_lab.reproducibility import numeric_mode_problem


def interval(found) -> dict:
    """An ``protocol.Interval`` as a record's fields (text as the pages print it)."""
    return {
        "estimate": found.estimate,
        "low": found.low,
        "high": found.high,
        "text": str(found),
        "excludes_zero": found.excludes_zero(),
    }


# --- chapter 3: the set classifier ----------------------------------------------------------


def set_classifier_run(split: int, seed: int, patience: int) -> dict:
    """Chapter 3's four models (and the page's test comparisons) on one split and seed."""
    import torch

    from transformer_lab.metrics import mcnemar_exact
    from transformer_lab.protocol import (
        SealedTest,
        correct,
        paired_bootstrap,
        slice_interaction,
    )
    from transformer_lab.set_classifier import (
        ARCHITECTURES,
        RECHECK_MAX_EPOCHS,
        train_architecture,
    )
    from transformer_lab.set_task import CLOSE_CALL_GAP, largest_key_gap, make_split

    train_data, val_data, test_data = make_split(split)
    test = SealedTest(*test_data)
    half = len(train_data[2]) // 2
    settings = {"seed": seed, "patience": patience, "epochs": RECHECK_MAX_EPOCHS}
    trained = {
        name: train_architecture(name, train_data, val_data, **settings)
        for name in ARCHITECTURES
    }
    trained["transformer, half data"] = train_architecture(
        "transformer", tuple(part[:half] for part in train_data), val_data, **settings
    )

    def score_all(x, padding, y):
        with torch.no_grad():
            right = {
                name: correct(run.model(x, padding), y) for name, run in trained.items()
            }
        return right, largest_key_gap(x, padding) < CLOSE_CALL_GAP

    right, close = test.score(score_all)
    comparisons = {
        "DeepSets - mean baseline": ("mean baseline", "DeepSets"),
        "transformer - DeepSets": ("DeepSets", "transformer"),
        "half data - all data": ("transformer", "transformer, half data"),
    }
    claims = {}
    for label, (a, b) in comparisons.items():
        gap = paired_bootstrap(right[a], right[b])
        p = mcnemar_exact(
            int((right[b] > right[a]).sum()), int((right[a] > right[b]).sum())
        )
        # the page's claim for the architecture gaps: positive, interval off zero, p < 0.001
        claims[label] = {**interval(gap), "mcnemar_p": p}
        claims[label]["holds"] = gap.estimate > 0 and gap.excludes_zero() and p < 0.001
    found, _ = slice_interaction(right["DeepSets"], right["transformer"], close)
    gains = {
        part: (right["transformer"][m].mean() - right["DeepSets"][m].mean()).item()
        for part, m in (("close", close), ("rest", ~close))
    }
    deepsets_errors = 1 - right["DeepSets"]
    claims["close calls - rest"] = {
        **interval(found),
        "gain_close": gains["close"],
        "gain_rest": gains["rest"],
        # the page's claim: the gain is larger on the close calls (interval off zero), both
        # gains positive, and DeepSets errs over twice as often on the close calls
        "holds": found.estimate > 0
        and found.excludes_zero()
        and gains["close"] > gains["rest"] > 0
        and bool(deepsets_errors[close].mean() > 2 * deepsets_errors[~close].mean()),
    }
    claims["error profile"] = error_profile(trained["transformer"].model, val_data)
    models = {
        name: {
            "best_epoch": run.best_epoch,
            "epochs": len(run.history),
            "stopped_early": run.stopped_early,
            "validation_loss": min(run.validation_loss),
            "validation_losses": run.validation_loss,
            "validation_accuracy": run.accuracy,
            "test_accuracy": right[name].mean().item(),
        }
        for name, run in trained.items()
    }
    return {
        "split": split,
        "seed": seed,
        "patience": patience,
        "models": models,
        "claims": claims,
    }


def error_profile(model, val_data) -> dict:
    """Where a trained set transformer errs on the validation sets, as chapter 3's table shows it:
    the loss on the sets with a nearly zero winning value and on the other close calls, each
    against the rest; the error rates; the attention on the largest key. ``holds`` is the page's
    pattern: both loss ratios above 3, no more errors on the rest than on the hard sets, and
    less attention on the largest key for close calls than for the rest."""
    import torch
    from torch.nn import functional as F

    from transformer_lab.set_classifier import largest_key_attention
    from transformer_lab.set_task import (
        CLOSE_CALL_GAP,
        NEAR_ZERO,
        largest_key_gap,
        largest_key_value,
    )

    x, padding, y = val_data
    with torch.no_grad():
        logits = model.eval()(x, padding)
    loss = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
    wrong = ((logits > 0).float() != y).float()
    near_zero = largest_key_value(x, padding).abs() < NEAR_ZERO
    close = (largest_key_gap(x, padding) < CLOSE_CALL_GAP) & ~near_zero
    hard = near_zero | close
    on_key = largest_key_attention(model, x, padding)["per_head"].mean(dim=1)
    found = {
        "near_zero_loss_ratio": (loss[near_zero].mean() / loss[~hard].mean()).item(),
        "close_loss_ratio": (loss[close].mean() / loss[~hard].mean()).item(),
        "error_rate_hard": wrong[hard].mean().item(),
        "error_rate_rest": wrong[~hard].mean().item(),
        "attention_close": on_key[close].mean().item(),
        "attention_rest": on_key[~hard].mean().item(),
        "errors": int(wrong.sum()),
    }
    found["holds"] = (
        found["near_zero_loss_ratio"] > 3
        and found["close_loss_ratio"] > 3
        and found["error_rate_rest"] <= found["error_rate_hard"]
        and found["attention_close"] < found["attention_rest"]
    )
    return found


def recheck_ch3() -> dict:
    from transformer_lab.set_classifier import (
        PATIENCE,
        RECHECK_PATIENCE_FACTORS,
        RECHECK_RUNS,
        learning_rate_search,
    )
    from transformer_lab.set_task import make_split

    started = time.perf_counter()
    train_data, val_data, _ = make_split(RECHECK_RUNS[0][0])  # the test split stays unread
    search = learning_rate_search(train_data, val_data, seed=RECHECK_RUNS[0][1])
    tuning = {
        name: {repr(rate): loss for rate, loss in losses.items()}
        for name, losses in search.items()
    }
    print(f"ch3 learning rates: {time.perf_counter() - started:.0f} s", flush=True)
    runs = []
    for split, seed in RECHECK_RUNS:
        for factor in RECHECK_PATIENCE_FACTORS:
            started = time.perf_counter()
            runs.append(set_classifier_run(split, seed, factor * PATIENCE))
            print(
                f"ch3 split {split} seed {seed} patience {factor * PATIENCE}: "
                f"{time.perf_counter() - started:.0f} s",
                flush=True,
            )
    return {"learning_rate_search": tuning, "runs": runs}


# --- chapter 4: position embeddings -----------------------------------------------------------


def position_runs(runs, probe, pairs, sample, **options) -> dict:
    """Chapter 4's experiment on ``runs``: every model's stopping record, and the page's two
    claims over the runs (the natural-split gap, the mirrored pairs' net share)."""
    from transformer_lab.char_transformer import position_experiment
    from transformer_lab.mirrored_pairs import balanced_net, pair_outcomes, template_nets
    from transformer_lab.protocol import seed_interval

    results = position_experiment(runs, sample, probe=probe, **options)
    models, gaps, nets, by_template, balanced = [], [], [], [], []
    for r in results:
        seed = int(r.scores["seed"].iloc[0])
        scores = r.scores.set_index("positions")
        gaps.append(scores.loc["with", "accuracy"] - scores.loc["without", "accuracy"])
        outcomes = {
            flag: pair_outcomes(r.probe_logits[seed, flag], pairs) for flag in (True, False)
        }
        nets.append(outcomes[True].net - outcomes[False].net)
        per_pair = (outcomes[True].read - outcomes[True].reversed) - (
            outcomes[False].read - outcomes[False].reversed
        )
        by_template.append({str(k): v for k, v in template_nets(per_pair, pairs).items()})
        balanced.append(balanced_net(per_pair, pairs))
        for row in r.scores.to_dict("records"):
            models.append(
                {
                    key: row[key]
                    for key in ("split", "seed", "positions", "best_epoch", "epochs")
                }
                | {
                    "stopped_early": bool(row["stopped_early"]),
                    "validation_loss": float(row["validation_loss"]),
                    "test_accuracy": float(row["accuracy"]),
                }
            )
    for model in models:
        for key in ("split", "seed", "best_epoch", "epochs"):
            model[key] = int(model[key])
    return {
        "models": models,
        "accuracy_gaps": [float(g) for g in gaps],
        "natural_gap": interval(seed_interval(gaps)),
        "pair_nets": [float(n) for n in nets],
        "pair_net": interval(seed_interval(nets)),
        "template_nets": by_template,
        "balanced_nets": [float(n) for n in balanced],
    }


def recheck_ch4() -> dict:
    from transformer_lab.char_transformer import (
        MAX_EPOCHS,
        PATIENCE,
        PATIENCE_RECHECK,
        PATIENCE_SHORT,
        RECHECK_MAX_EPOCHS,
        RECHECK_OTHER_RUNS,
        RUNS,
        encode_texts,
        load_praise_sample,
    )
    from transformer_lab.datasets import load_feedback
    from transformer_lab.mirrored_pairs import mirrored_pairs

    sample = load_praise_sample()
    pairs = mirrored_pairs(list(load_feedback()["feedback_text"]))
    probe = encode_texts(pairs.texts)
    found = {}
    for label, runs, patience, max_epochs in (
        ("shorter_patience", RUNS, PATIENCE_SHORT, MAX_EPOCHS),
        ("page", RUNS, PATIENCE, MAX_EPOCHS),
        ("longer_patience", RUNS, PATIENCE_RECHECK, RECHECK_MAX_EPOCHS),
        ("other_runs", RECHECK_OTHER_RUNS, PATIENCE, MAX_EPOCHS),
    ):
        started = time.perf_counter()
        found[label] = position_runs(
            runs, probe, pairs, sample, patience=patience, max_epochs=max_epochs
        )
        found[label]["patience"] = patience
        print(f"ch4 {label}: {time.perf_counter() - started:.0f} s", flush=True)
    found["pooled"] = pooled_runs(found["page"], found["other_runs"])
    found["pair_counts"] = {
        str(k): int(v) for k, v in zip(*np.unique(pairs.template, return_counts=True))
    }
    return found


def pooled_runs(*parts: dict) -> dict:
    """Chapter 4's primary comparison, stated before the runs: the natural-split accuracy gap
    (with − without positions) over every run of the page's recipe (its own and the other
    splits), with a t interval and a sign test; the mirrored pairs' nets likewise, by pair and
    with every template weighted alike."""
    from transformer_lab.protocol import seed_interval, sign_test

    gaps = [g for part in parts for g in part["accuracy_gaps"]]
    nets = [n for part in parts for n in part["pair_nets"]]
    balanced = [n for part in parts for n in part["balanced_nets"]]
    return {
        "runs": len(gaps),
        "accuracy_gaps": gaps,
        "natural_gap": interval(seed_interval(gaps)),
        "natural_sign_p": sign_test(gaps),
        "pair_net": interval(seed_interval(nets)),
        "balanced_net": interval(seed_interval(balanced)),
        "balanced_sign_p": sign_test(balanced),
    }


# --- chapter 6: the bake-off -------------------------------------------------------------------


def bakeoff_claims(results) -> dict:
    """The page's claims on one ``run_bakeoff`` result, computed as chapter 6 computes them."""
    from transformer_lab.bakeoff import (
        CALL_LIST_SHARE,
        MODEL_NAMES,
        evidence_with_test_draw,
        paired_difference,
        paired_evidence,
        summarise,
        top_standard_error,
    )

    trees = "gradient-boosted trees"
    others = [name for name in MODEL_NAMES if name != trees]
    summary = summarise(results)
    rival = (
        summarise(results.assign(roc_auc=results["validation_auc"]))
        .drop(index=trees)["auc_mean"]
        .idxmax()
    )
    runs_only = {
        name: paired_evidence(paired_difference(results, trees, name)) for name in others
    }
    with_draw = {name: evidence_with_test_draw(results, trees, name) for name in others}
    n_called = round(CALL_LIST_SHARE * results["n_test"].iloc[0])
    top_gap = evidence_with_test_draw(results, trees, rival, "precision_at_top")
    trees_top = results.loc[results["model"] == trees, "precision_at_top"].mean()
    return {
        "leader": summary["auc_mean"].idxmax(),
        "auc_mean": {name: float(row.auc_mean) for name, row in summary.iterrows()},
        "rival": rival,
        "gaps_runs_only": {name: interval(found[0]) for name, found in runs_only.items()},
        "gaps_with_test_draw": {name: interval(found) for name, found in with_draw.items()},
        "clear_runs_only": [n for n in others if runs_only[n][0].low > 0],
        "clear_with_test_draw": [n for n in others if with_draw[n].low > 0],
        "top_gap": interval(top_gap),
        "top_gap_smaller_than_two_se": bool(
            abs(top_gap.estimate) < 2 * top_standard_error(trees_top, n_called)
        ),
        "models": [
            {
                "model": row.model,
                "run": int(row.run),
                "length": int(row.length),
                "stopped_early": bool(row.stopped_early),
                "validation_auc": float(row.validation_auc),
                "test_auc": float(row.roc_auc),
            }
            for row in results.itertuples()
        ],
    }


def recheck_ch6() -> dict:
    from transformer_lab.bakeoff import (
        PATIENCE,
        PATIENCE_RECHECK,
        RUNS,
        SEALED_SEED,
        make_models,
        recipes_for,
        run_bakeoff,
    )
    from transformer_lab.datasets import load_customer360

    customers = load_customer360()
    recipes = recipes_for(customers, SEALED_SEED)
    found = {}
    for label, patience in (("page", PATIENCE), ("longer_patience", PATIENCE_RECHECK)):
        started = time.perf_counter()

        def models(run: int, patience: int = patience) -> dict:
            return make_models(run, recipes, patience)

        results = run_bakeoff(customers, runs=RUNS, models=models, sealed_seed=SEALED_SEED)
        found[label] = {"patience": patience, **bakeoff_claims(results)}
        print(f"ch6 {label}: {time.perf_counter() - started:.0f} s", flush=True)
    return found


RECHECKS = {"ch3": recheck_ch3, "ch4": recheck_ch4, "ch6": recheck_ch6}


def mode() -> str:
    """The numeric mode the record was made in, in a few words."""
    problem = numeric_mode_problem()
    return (
        "canonical numeric mode"
        if problem is None
        else f"NOT the canonical mode: {problem}"
    )


def provenance(chapter: str, seconds: float, load_before: str) -> dict:
    """When, where and how a record was made (the pages print it)."""
    cpu = cpu_info()
    return {
        "command": f"python tools/rechecks.py {chapter}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cpu": f"{cpu['model']} ({cpu['cores']}; {cpu['isa']})",
        "numeric_mode": mode(),
        "wall_seconds": round(seconds),
        "load_average": load_before,
    }


def differences(committed: object, fresh: object, where: str = "results") -> list[str]:
    """Where two records' results differ, one path each (``results.runs[0].models...``); exact:
    the records are made in the canonical numeric mode, where a re-run repeats every bit."""
    if isinstance(committed, dict) and isinstance(fresh, dict):
        return [
            line
            for key in sorted(set(committed) | set(fresh), key=str)
            for line in differences(committed.get(key), fresh.get(key), f"{where}.{key}")
        ]
    if (
        isinstance(committed, list)
        and isinstance(fresh, list)
        and len(committed) == len(fresh)
    ):
        return [
            line
            for i, (a, b) in enumerate(zip(committed, fresh))
            for line in differences(a, b, f"{where}[{i}]")
        ]
    return [] if committed == fresh else [f"{where}: {committed!r} -> {fresh!r}"]


def check(chapter: str, results: dict) -> list[str]:
    """What differs between ``chapter``'s committed record and a fresh re-run's ``results``:
    a stale recipe (the record must be re-made) or other numbers (the code does not repeat)."""
    try:
        committed = load_record(chapter, strict_versions=True)
    except StaleRecordError as error:
        return [str(error)]
    # through JSON, as a written record is: tuples become lists, keys strings
    return differences(committed["results"], json.loads(json.dumps(results)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "chapters", nargs="*", help=f"any of {list(EXPERIMENTS)} (default: all)"
    )
    parser.add_argument(
        "--any-mode",
        action="store_true",
        help="record even outside the canonical numeric mode (the pages say theirs is canonical)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="re-run and compare with the committed records instead of writing them "
        "(exit 1 when a recipe is stale or a result differs)",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.chapters) - set(EXPERIMENTS))
    if unknown:
        parser.error(f"no re-check for {unknown}: choose among {list(EXPERIMENTS)}")
    if numeric_mode_problem() is not None and not args.any_mode:
        parser.error(
            f"{mode()}; the records are the canonical mode's (x86-64 with AVX2), "
            "so run this there, or pass --any-mode to record anyway"
        )
    chapters = args.chapters or list(EXPERIMENTS)
    failed = []
    for chapter in chapters:
        load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        recipe = recipe_of(chapter)
        started = time.perf_counter()
        results = RECHECKS[chapter]()
        seconds = time.perf_counter() - started
        # the record is stamped with the recipe at the end: it must be the one that ran
        if fingerprint(recipe_of(chapter)) != fingerprint(recipe):
            changed = "; ".join(recipe_changes(recipe, recipe_of(chapter)))
            parser.exit(
                1, f"{chapter}: the recipe changed while it ran ({changed}); no record\n"
            )
        if args.check:
            found = check(chapter, results)
            for line in found[:20]:
                print(f"{chapter}: {line}")
            if found:
                failed.append(chapter)
            print(
                f"{chapter}: {seconds:.0f} s; " + ("DIFFERS" if found else "same results")
            )
            continue
        path = write_record(chapter, results, provenance(chapter, seconds, load_before))
        print(f"{chapter}: {seconds:.0f} s (load before {load_before}); wrote {path}")
    if failed:
        parser.exit(
            1,
            f"the committed re-check records of {', '.join(failed)} differ from a re-run: if the "
            f"change was meant, run `{RERUN_COMMAND}` and commit the records\n",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
