"""NumPy einsum subscripts (``"ij,jk->ik"``, ``"...ij,...jk"``, or the sublist form) as a
Program of one statement, with NumPy's rules: implicit output, ellipsis broadcasting
(right-aligned) and size-1 broadcasting of labels. Labels are any Unicode letter, as in
opt_einsum (NumPy takes a-z and A-Z); the program names the others in ASCII.
"""
from __future__ import annotations

import string
from dataclasses import dataclass

from ..errors import DataError
from .model import Binary, InputDecl, Program, Ref, Statement
from .semirings import SEMIRINGS, Semiring

LETTERS = string.ascii_letters            # NumPy's labels; sublist integers 0-51 map onto them


def program_label(letter: str) -> str:
    """The program's name of a label letter: itself in ASCII, else ``u`` and its code
    point in hex (``α`` -> ``u3b1``), never a single letter."""
    return letter if letter in LETTERS else f"u{ord(letter):x}"


@dataclass(frozen=True)
class Subscripts:
    """Each operand's labels and the output's, after ellipsis expansion; `squeeze` lists
    per operand the axes of size 1 that broadcast against a larger size (they are
    indexed at 0 and leave the operand's term)."""
    terms: list[str]
    output: str
    squeeze: list[tuple[int, ...]]
    sizes: dict[str, int]

    def program(self, semiring: Semiring = SEMIRINGS["plus_times"]) -> Program:
        """Inputs T0, T1, ... (absent entries: the semiring's zero) and the statement
        OUT[output] = T0[..] * T1[..] * ... (the semiring's product, and its sum over the
        labels not in the output)."""
        program = Program()
        refs = []
        for k, term in enumerate(self.terms):
            name = f"T{k}"
            axes = tuple(f"{name}_{n}" for n in range(len(term)))   # distinct declared labels
            program.inputs[name] = InputDecl(name, axes, (None,) * len(term),
                                             default=semiring.zero)
            refs.append(Ref(name, tuple(map(program_label, term))))
        expr = refs[0]
        for ref in refs[1:]:
            expr = Binary(semiring.product, expr, ref)
        program.statements.append(Statement("OUT", tuple(map(program_label, self.output)), expr,
                                            semiring.sum))
        program.outputs.append("OUT")
        return program

    def label_names(self) -> dict[str, str]:
        """Lower-case letter -> the program label it stands for, for pinned UCLC plans (""
        when the expression uses the letter in both cases, which makes a pinned plan
        ambiguous)."""
        mapping: dict[str, str] = {}
        for c in "".join(self.terms):
            if mapping.setdefault(c.lower(), program_label(c)) != program_label(c):
                mapping[c.lower()] = ""
        return mapping


def sublist_subscripts(args: tuple) -> tuple[str, list]:
    """NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as a subscripts
    string and the operands."""
    operands, terms = list(args[0::2]), []
    output = None
    if len(args) % 2 == 1:
        output = args[-1]
        operands = operands[:-1]
    for sub in [args[k] for k in range(1, len(args) - (len(args) % 2), 2)] + (
            [output] if output is not None else []):
        try:
            items = list(sub)
        except TypeError:
            raise DataError(f"einsum: expected a sublist of integers and Ellipsis but found "
                            f"{type(sub).__name__}") from None
        term = ""
        for item in items:
            if item is Ellipsis:
                term += "..."
            elif isinstance(item, (int,)) or hasattr(item, "__index__"):
                n = int(item)
                if not 0 <= n < len(LETTERS):
                    raise DataError(f"einsum: subscript {n} in a sublist is outside 0..51")
                term += LETTERS[n]
            else:
                raise DataError(f"einsum: expected integers or Ellipsis in a sublist but found "
                                f"{item!r}")
        terms.append(term)
    text = ",".join(terms[:len(operands)])
    if output is not None:
        text += "->" + terms[-1]
    return text, operands


def _check_letters(labels: str, subscripts: str) -> None:
    for c in labels:
        if not c.isalpha():
            raise DataError(f"einsum {subscripts!r}: {c!r} is not a label letter")


def _split_term(term: str, ndim: int | None, subscripts: str, k: int) -> tuple[str, int]:
    """A term's explicit labels and how many dimensions its ellipsis covers (`ndim` None:
    an operand of unknown shape, such as a data frame in COO form)."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise DataError(f"einsum {subscripts!r}: operand {k} has an invalid ellipsis "
                        "(one '...' per term)")
    letters = term.replace("...", "")
    _check_letters(letters, subscripts)
    if ndim is None:
        if "..." in term:
            raise DataError(f"einsum {subscripts!r}: operand {k} (a data frame) cannot use '...'")
        return letters, 0
    if "..." not in term:
        if len(letters) != ndim:
            raise DataError(f"einsum {subscripts!r}: operand {k} has {ndim} dimensions but its "
                            f"term {term!r} has {len(letters)} labels")
        return letters, 0
    covered = ndim - len(letters)
    if covered < 0:
        raise DataError(f"einsum {subscripts!r}: operand {k} has {ndim} dimensions but its "
                        f"term {term!r} has {len(letters)} labels")
    return letters, covered


def parse_subscripts(subscripts: str, shapes: list[tuple[int, ...] | None]) -> Subscripts:
    """The labels of every operand and of the output, NumPy's rules applied (a shape None
    is unknown: the operand takes part in no broadcasting)."""
    if not isinstance(subscripts, str):
        raise DataError(f"einsum: subscripts must be a string such as 'ij,jk->ik', not "
                        f"{type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    lhs, arrow, out = text.partition("->")
    if "-" in lhs or ">" in lhs or "->" in out:
        raise DataError(f"einsum {subscripts!r}: '->' may appear once, before the output")
    raw_terms = lhs.split(",")
    if len(raw_terms) != len(shapes):
        raise DataError(f"einsum {subscripts!r} has {len(raw_terms)} operand terms but "
                        f"{len(shapes)} operands were given")
    parts = [_split_term(t, None if s is None else len(s), subscripts, k)
             for k, (t, s) in enumerate(zip(raw_terms, shapes))]
    broadcast = max((n for _, n in parts), default=0)
    used = set("".join(p for p, _ in parts) + out)
    free = [c for c in LETTERS if c not in used]
    if broadcast > len(free):
        raise DataError(f"einsum {subscripts!r}: too many labels (at most {len(LETTERS)})")
    ellipsis = "".join(free[:broadcast])
    terms = [t.replace("...", ellipsis[broadcast - n:]) if "..." in t else t
             for t, (_, n) in zip(raw_terms, parts)]
    if arrow:
        if "..." not in out and broadcast and any(n for _, n in parts):
            raise DataError(f"einsum {subscripts!r}: the operands' '...' covers {broadcast} "
                            "dimensions but the output has no '...' to put them")
        output = out.replace("...", ellipsis)
        _check_letters(out.replace("...", ""), subscripts)
    else:
        counts: dict[str, int] = {}
        for c in "".join(p for p, _ in parts):
            counts[c] = counts.get(c, 0) + 1
        output = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(output)) != len(output):
        raise DataError(f"einsum {subscripts!r}: an output label repeats")
    missing = set(output) - set("".join(terms))
    if missing:
        raise DataError(f"einsum {subscripts!r}: output label {sorted(missing)[0]} appears in "
                        "no operand")
    return _broadcast(subscripts, terms, output, shapes)


def _broadcast(subscripts: str, terms: list[str], output: str,
               shapes: list[tuple[int, ...]]) -> Subscripts:
    """Label sizes, NumPy's rule: the axes of a label within one operand have one size;
    across operands, size-1 axes against a larger size broadcast (are squeezed out, a
    repeated label's all together: the diagonal of size-1 axes is their element 0)."""
    known = [(k, t, s) for k, (t, s) in enumerate(zip(terms, shapes)) if s is not None]
    sizes: dict[str, int] = {}
    for k, term, shape in known:
        within: dict[str, int] = {}
        for label, n in zip(term, shape):
            if within.setdefault(label, n) != n:
                raise DataError(f"einsum {subscripts!r}: label {label!r} repeats in operand {k} "
                                f"with sizes {within[label]} and {n} (a label's axes in one "
                                "operand must have one size)")
        for label, n in within.items():
            if sizes.get(label, 1) == 1:
                sizes[label] = n          # 0 is a size like any other: 1 broadcasts to it
            elif n not in (1, sizes[label]):
                raise DataError(f"einsum {subscripts!r}: label {label!r} has size {sizes[label]} "
                                f"in one operand and {n} in another (sizes must match or be 1)")
    squeeze, kept = [], []
    for term, shape in zip(terms, shapes):
        axes = tuple(a for a, (label, n) in enumerate(zip(term, shape or ()))
                     if n == 1 and sizes[label] != 1)
        squeeze.append(axes)
        kept.append("".join(c for a, c in enumerate(term) if a not in axes))
    return Subscripts(kept, output, squeeze, sizes)
