#!/usr/bin/env python3
"""Optuna on the same replayed space as tune's smart search (bench/search_replay.cpp writes the
table: every point's assignment, the exhaustive sweep's score and wall time, the guides' starts).
The same protocol as the smart search, so that only the engine differs: the guides' starts first
(enqueued), then the sampler's suggestions, all measured briefly (a brief point's cost, its score
with 3% log-normal noise), while the budget leaves room for the finalists; then the best 4 again
in full (1% noise); the winner is the best measured in full, judged by the sweep's own score.

  optuna_replay.py TABLE FRACTION SEEDS [tpe|gp]   -> JSON on stdout, as search_replay's"""
import json
import math
import random
import sys
import warnings

import optuna

FINALISTS = 4


def run(table, fraction, seed, sampler_name):
    points = table["points"]
    axes = table["axes"]
    by_assignment = {tuple(p["assignment"]): i for i, p in enumerate(points)}
    rng = random.Random(seed)
    budget = fraction * table["sweep_s"]
    spent = 0.0
    brief = {}  # point -> seen brief score (None: failed)

    def nearest(assignment):
        exact = by_assignment.get(tuple(assignment))
        if exact is not None:
            return exact
        return min(range(len(points)),
                   key=lambda i: sum(a != b for a, b in zip(points[i]["assignment"], assignment)))

    def finals_cost():
        ranked = sorted((i for i, s in brief.items() if s), key=lambda i: -brief[i])[:FINALISTS]
        dearest = max([points[i]["full_s"] for i in ranked] or [0])
        return max(FINALISTS, len(ranked)) * dearest if brief else 0

    sampler = (optuna.samplers.GPSampler(seed=seed) if sampler_name == "gp"
               else optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    distributions = {a["knob"]: optuna.distributions.CategoricalDistribution(a["values"]) for a in axes}
    for i in table["starts"]:
        study.enqueue_trial({a["knob"]: a["values"][v]
                             for a, v in zip(axes, points[i]["assignment"])})
    asked = 0
    while asked < 20 * len(points) and len(brief) < len(points):
        trial = study.ask(distributions)
        asked += 1
        assignment = [a["values"].index(trial.params[a["knob"]]) for a in axes]
        i = nearest(assignment)
        if i in brief:  # a point measured already: its score again, at no cost
            study.tell(trial, brief[i] if brief[i] else 0.0)
            continue
        cost = points[i]["brief_s"]
        if spent + cost + finals_cost() > budget and brief:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        spent += cost
        truth = points[i]["score"]
        brief[i] = truth * math.exp(rng.gauss(0, 0.03)) if truth > 0 else None
        study.tell(trial, brief[i] if brief[i] else 0.0)
    winner, best_seen = 0.0, -1.0
    for i in sorted((i for i, s in brief.items() if s), key=lambda i: -brief[i])[:FINALISTS]:
        if spent + points[i]["full_s"] > budget:
            break
        spent += points[i]["full_s"]
        seen = points[i]["score"] * math.exp(rng.gauss(0, 0.01))
        if seen > best_seen:
            best_seen, winner = seen, points[i]["score"]
    return {"seed": seed, "ratio": winner / table["best"], "spent_fraction": spent / table["sweep_s"],
            "points": len(brief) + min(FINALISTS, len(brief)), "search": f"{len(brief)} brief"}


def main(argv):
    table = json.load(open(argv[0]))
    fraction, seeds = float(argv[1]), int(argv[2])
    sampler = argv[3] if len(argv) > 3 else "tpe"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    runs = [run(table, fraction, seed, sampler) for seed in range(1, seeds + 1)]
    print(json.dumps({"engine": f"optuna-{sampler}", "sweep_s": table["sweep_s"],
                      "points": len(table["points"]), "fraction": fraction, "runs": runs}))


if __name__ == "__main__":
    main(sys.argv[1:])
