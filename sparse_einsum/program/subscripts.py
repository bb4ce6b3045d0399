"""NumPy einsum subscripts (``"ij,jk->ik"``) as a Program of one statement."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import DataError, PlanError
from .model import Binary, InputDecl, Program, Ref, Statement


@dataclass(frozen=True)
class Subscripts:
    terms: list[str]          # one per operand
    output: str

    def program(self) -> Program:
        """Inputs T0, T1, ... and the statement OUT[output] = T0[..] * T1[..] * ..."""
        program = Program()
        refs = []
        for k, term in enumerate(self.terms):
            name = f"T{k}"
            axes = tuple(f"{name}_{n}" for n in range(len(term)))   # distinct declared labels
            program.inputs[name] = InputDecl(name, axes, (None,) * len(term))
            refs.append(Ref(name, tuple(term)))
        expr = refs[0]
        for ref in refs[1:]:
            expr = Binary("*", expr, ref)
        program.statements.append(Statement("OUT", tuple(self.output), expr))
        program.outputs.append("OUT")
        return program

    def label_names(self) -> dict[str, str]:
        """Lower-case letter -> the label it stands for, for pinned UCLC plans ("" when the
        expression uses the letter in both cases, which makes a pinned plan ambiguous)."""
        mapping: dict[str, str] = {}
        for c in "".join(self.terms):
            if mapping.setdefault(c.lower(), c) != c:
                mapping[c.lower()] = ""
        return mapping


def parse_subscripts(subscripts: str, n_operands: int) -> Subscripts:
    """Input terms and the output term of a NumPy einsum string (implicit output allowed)."""
    if not isinstance(subscripts, str):
        raise DataError(f"einsum: the subscripts must be a string such as 'ij,jk->ik', not "
                        f"{type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    if "." in text:
        raise PlanError(f"einsum {subscripts!r}: ellipsis ('...') is not supported")
    if "->" in text:
        lhs, out = text.split("->", 1)
    else:
        lhs, out = text, None
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise DataError(f"einsum {subscripts!r} has {len(terms)} operand terms but "
                        f"{n_operands} operands were given")
    for term in terms + ([out] if out else []):
        bad = [c for c in term if not c.isalpha()]
        if bad:
            raise PlanError(f"einsum {subscripts!r}: {bad[0]!r} is not a label letter")
    if out is None:
        counts: dict[str, int] = {}
        for c in "".join(terms):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(out)) != len(out):
        raise PlanError(f"einsum {subscripts!r}: output label repeats")
    missing = set(out) - set("".join(terms))
    if missing:
        raise PlanError(f"einsum {subscripts!r}: output label {sorted(missing)[0]} "
                        "appears in no operand")
    return Subscripts(terms, out)
