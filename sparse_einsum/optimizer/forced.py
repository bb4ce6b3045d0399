"""Plans given by name rather than chosen by cost: relational, dense, random, pinned."""
from __future__ import annotations

import random
import re

from ..errors import PlanError
from ..plan import Plan
from ..program.dag import Dag


def relational_plan(dag: Dag) -> Plan:
    """Every label promoted: the classic einsum-to-SQL translation."""
    return Plan({v.name: frozenset(v.all_labels) for v in dag.vertices}, name="relational")


def dense_plan(dag: Dag) -> Plan:
    """Nothing promoted: each tensor is one tuple and kernels do all the work."""
    return Plan({v.name: frozenset() for v in dag.vertices}, name="dense")


def random_plan(dag: Dag, seed: int) -> Plan:
    """A random valid decomposition of every vertex (each label promoted with p = 1/2)."""
    rng = random.Random(seed)
    return Plan({v.name: frozenset(l for l in v.all_labels if rng.random() < 0.5)
                 for v in dag.vertices}, name=f"random:{seed}")


def pinned_plan(dag: Dag, subscripts: str, statement_labels: dict[str, str] | None = None) -> Plan:
    """A plan from UCLC subscripts such as ``Ij,jK->IK``: upper-case labels are promoted.

    Applies to a program of one statement (possibly split into several vertices);
    `statement_labels` maps a lower-case letter to the program's label name.
    """
    names = {v.name.split("~")[0] for v in dag.vertices}
    if len(names) != 1:
        raise PlanError("a pinned UCLC plan applies to a program of a single statement; "
                        f"this one has {len(names)}")
    terms = subscripts.replace(" ", "")
    status: dict[str, bool] = {}
    for ch in terms:
        if ch.isalpha():
            key = ch.lower()
            if status.setdefault(key, ch.isupper()) != ch.isupper():
                raise PlanError(f"pinned plan {subscripts!r}: label {key} is promoted in one "
                                "place and demoted in another")
    mapping = statement_labels or {}
    if any(mapping.get(k) == "" for k in status):
        raise PlanError(f"pinned plan {subscripts!r} is ambiguous: the expression uses a label "
                        "letter in both cases")
    promoted = {mapping.get(k, k) for k, up in status.items() if up}
    known = {l for v in dag.vertices for l in v.all_labels}
    unknown = {mapping.get(k, k) for k in status} - known
    missing = known - {mapping.get(k, k) for k in status}
    if unknown or missing:
        raise PlanError(f"pinned plan {subscripts!r} does not match the expression's labels "
                        f"{''.join(sorted(known))}")
    return Plan({v.name: frozenset(l for l in v.all_labels if l in promoted)
                 for v in dag.vertices}, name=f"pinned:{subscripts}")


OPTIMIZER_PLANS = ("optimal", "greedy")
_PINNED = re.compile(r"^[A-Za-z]*(,[A-Za-z]*)*(->[A-Za-z]*)?$")


def forced_plan(dag: Dag, spec: str, statement_labels: dict[str, str] | None = None) -> Plan | None:
    """The plan named by `spec`, or None when `spec` asks the optimizer."""
    if spec in OPTIMIZER_PLANS or spec.startswith("rank:"):
        return None
    if spec == "relational":
        return relational_plan(dag)
    if spec == "dense":
        return dense_plan(dag)
    if spec.startswith("random:"):
        try:
            return random_plan(dag, int(spec.split(":", 1)[1]))
        except ValueError:
            raise PlanError(f"plan {spec!r}: the seed after 'random:' must be an integer") from None
    if _PINNED.match(spec.replace(" ", "")) and ("->" in spec or "," in spec or spec != spec.lower()):
        return pinned_plan(dag, spec, statement_labels)
    raise PlanError(f"unknown plan {spec!r}: use optimal, greedy, rank:N, relational, dense, "
                    "random:SEED or UCLC subscripts such as 'Ij,jK->IK'")
