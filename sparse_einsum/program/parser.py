"""Parser for the ``.se`` text form of an EinSum program.

One declaration or statement per line; ``#`` starts a comment::

    input A[i,j]
    input H[j:2708,f]                           # optional declared bound per label
    input E[i,j] from edges(src, dst, weight)   # key column per label, optional value column
    input F[i,j] from 'edges.parquet'(src, dst) # a Parquet or CSV file, read in place
    input W[i,j] default inf                    # absent entries are inf (0 when omitted)
    AH[i,f] = A[i,j] * H[j,f]                   # labels not on the left are summed out
    M[i]    = max(AH[i,f])                      # aggregate wrapper: sum | max | min
    S[]     = sum(exp(AH[i,f]))                 # a scalar
    output AH, M                                # default: the last statement's tensor

Grammar (``input`` and ``output`` start a declaration unless followed by ``[``, so
``input[i] = ...`` defines a tensor called ``input``; ``from`` is a keyword only after
an input's labels)::

    rhs     := AGG '(' expr ')' | expr         # the aggregate wraps the whole right side
    expr    := term (('+' | '-') term)*
    term    := unary (('*' | '/') unary)*
    unary   := '-' unary | primary             # '-' on a constant folds into the constant
    primary := NUMBER | FN '(' expr ')' | NAME '[' labels ']' | '(' expr ')'
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple, NoReturn

from sparse_einsum.errors import ProgramError
from sparse_einsum.memory import gc_paused
from sparse_einsum.program.model import (
    AGGREGATES, UNARY_FUNCTIONS, Binary, Const, Expr, InputDecl, Program, Ref, Statement,
    TableSource, Unary,
)

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\f\r\v]+)
  | (?P<comment>\#.*)
  | (?P<num>(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<string>'(?:[^']|'')*')
  | (?P<op>[-+*/()\[\],:=])
""", re.VERBOSE)


class Token(NamedTuple):
    kind: str      # "ident", "qident", "string", "num", "op" or "eol"
    text: str      # as written ("" for eol)
    value: str     # the identifier (quoted ones unescaped), else the text
    line: int
    column: int    # 1-based


def _describe(tok: Token) -> str:
    return "end of line" if tok.kind == "eol" else f"'{tok.text}'"


def tokenize_line(text: str, line: int = 1, source: str | None = None) -> tuple[list[Token], str]:
    """The tokens of one line (ending with an "eol" token) and the line without its comment."""
    tokens: list[Token] = []
    pos, end = 0, len(text)
    match = _TOKEN.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            what = (f"expected {text[pos]!r} closing the quoted "
                    f"{'identifier' if text[pos] == chr(34) else 'file name'} but found end of line"
                    if text[pos] in "\"'" else
                    f"expected a name, a number or one of + - * / ( ) [ ] , : = "
                    f"but found '{text[pos]}'")
            raise ProgramError(what, source=source, line=line, column=pos + 1)
        kind = m.lastgroup or ""
        if kind == "ws":
            pos = m.end()
            continue
        if kind == "comment":
            end = pos
            break
        raw = m.group()
        value = raw[1:-1].replace(raw[0] * 2, raw[0]) if kind in ("qident", "string") else raw
        tokens.append(Token(kind, raw, value, line, pos + 1))
        pos = m.end()
    code = text[:end].rstrip()
    tokens.append(Token("eol", "", "", line, len(code) + 1))
    return tokens, code.strip()


class _LineParser:
    """Descent over the tokens of one line; expressions by operator precedence."""

    def __init__(self, tokens: list[Token], source: str | None):
        # the eol token twice: `peek(1)` at the end needs no bounds check (`next` stops at eol)
        self.tokens, self.pos, self.source = tokens + tokens[-1:], 0, source

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[self.pos + ahead]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eol":
            self.pos += 1
        return tok

    def is_op(self, text: str, ahead: int = 0) -> bool:
        return self.tokens[self.pos + ahead].text == text   # only an op token is spelled so

    def fail(self, message: str, tok: Token | None = None) -> NoReturn:
        tok = tok or self.peek()
        raise ProgramError(message, source=self.source, line=tok.line, column=tok.column)

    def expected(self, what: str) -> NoReturn:
        self.fail(f"expected {what} but found {_describe(self.peek())}")

    def accept(self, op: str) -> bool:
        if self.is_op(op):
            self.next()
            return True
        return False

    def expect(self, op: str, what: str | None = None) -> None:
        if not self.accept(op):
            self.expected(what or f"'{op}'")

    def ident(self, what: str) -> Token:
        if self.peek().kind != "ident":
            self.expected(what)
        return self.next()

    def end(self, what: str = "end of line") -> None:
        if self.peek().kind != "eol":
            self.expected(what)

    def new_name(self, defined: dict[str, int], what: str) -> Token:
        tok = self.ident(what)
        if tok.value in defined:
            self.fail(f"tensor '{tok.value}' is already defined on line {defined[tok.value]}", tok)
        defined[tok.value] = tok.line
        return tok

    def labels(self, owner: str, *, bounds: bool = False, distinct: str | None = None,
               bracketed: bool = True) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
        """``[a:3, b]`` after tensor `owner` (or the same without brackets): labels and declared
        bounds; with `distinct` (a description of the owner) a repeated label is an error."""
        close = "']'" if bracketed else "end of line"
        if bracketed:
            self.expect("[", f"'[' after '{owner}'")
        labels: list[str] = []
        sizes: list[int | None] = []
        done = self.accept("]") if bracketed else self.peek().kind == "eol"
        while not done:
            tok = self.ident("a label")
            if distinct and tok.value in labels:
                self.fail(f"label '{tok.value}' repeats in {distinct}; expected distinct labels", tok)
            size = None
            if bounds and self.accept(":"):
                num = self.peek()
                if num.kind != "num" or not num.text.isdigit() or int(num.text) == 0:
                    self.expected(f"a positive integer bound for label '{tok.value}'")
                size = int(self.next().text)
            labels.append(tok.value)
            sizes.append(size)
            done = self.accept("]") if bracketed else self.peek().kind == "eol"
            if not done:
                colon = "':', " if bounds and size is None else ""
                self.expect(",", f"{colon}',' or {close}")
        return tuple(labels), tuple(sizes)

    def sql_name(self, what: str) -> str:
        tok = self.peek()
        if tok.kind not in ("ident", "qident") or not tok.value:
            self.expected(what)
        return self.next().value

    def table_source(self, tensor: str, n_labels: int) -> TableSource:
        tok = self.peek()
        is_file = tok.kind == "string"
        if is_file and not tok.value:
            self.expected("a file name")
        table = self.next().value if is_file else self.sql_name("a table name")
        self.expect("(", "'(' after the table name")
        columns: list[str] = []
        while not self.accept(")"):
            if columns:
                self.expect(",", "',' or ')'")
            columns.append(self.sql_name("a column name"))
        if len(columns) not in (n_labels, n_labels + 1):
            self.fail(f"expected {n_labels} key columns (one per label of {tensor}) and an optional "
                      f"value column but found {len(columns)} columns in table {tok.text}", tok)
        value = columns[n_labels] if len(columns) > n_labels else None
        return TableSource(table, tuple(columns[:n_labels]), value, is_file)

    def input_decl(self, defined: dict[str, int]) -> InputDecl:
        tok = self.new_name(defined, "an input name")
        name = tok.value
        labels, bounds = self.labels(name, bounds=True, distinct=f"the declaration of input {name}")
        source, default, left = None, 0.0, ["from", "default"]   # either clause, once each
        while self.peek().kind == "ident" and self.peek().value in left:
            clause = self.next().value
            left.remove(clause)
            if clause == "from":
                source = self.table_source(name, len(labels))
            else:
                default = self.default_value()
        self.end(", ".join(f"'{clause}'" for clause in left) + " or end of line")
        return InputDecl(name, labels, bounds, source, tok.line, default)

    def default_value(self) -> float:
        """A number, ``inf`` or ``-inf`` (the value of an input's absent entries)."""
        sign = -1.0 if self.accept("-") else 1.0
        tok = self.peek()
        if tok.kind == "num" or (tok.kind == "ident" and tok.value == "inf"):
            self.next()
            return sign * float(tok.value)
        self.expected("a number, inf or -inf after 'default'")

    def output_names(self) -> list[Token]:
        names = [self.ident("a tensor name")]
        while self.accept(","):
            names.append(self.ident("a tensor name"))
        self.end("',' or end of line")
        return names

    def target(self, defined: dict[str, int] | None = None) -> tuple[str, tuple[str, ...]]:
        tok = self.new_name(defined, "a tensor name") if defined is not None else self.ident("a tensor name")
        labels, _ = self.labels(tok.value, distinct=f"the left-hand side of {tok.value}")
        return tok.value, labels

    def rhs(self) -> tuple[str, Expr]:
        tok = self.peek()
        if tok.kind == "ident" and tok.value in AGGREGATES and self.is_op("(", 1):
            self.next(), self.next()
            expr = self.expr()
            self.expect(")")
            if self.peek().kind != "eol":
                self.fail(f"aggregate '{tok.value}' must be the outermost call of the right-hand side, "
                          f"but found {_describe(self.peek())} after its closing ')'", tok)
            return tok.value, expr
        expr = self.expr()
        self.end("an operator or end of line")
        return "sum", expr

    def expr(self) -> Expr:
        """Operator-precedence parsing with explicit stacks (no recursion, so neither
        nesting depth nor the number of terms is limited): `operands` holds parsed
        subexpressions; `pending` holds binary operators, prefix '-' and open '(' or
        ``FN(`` not yet closed. It stops before the first token that cannot continue the
        expression (a ')' closing nothing here is left for the caller)."""
        operands: list[Expr] = []
        pending: list[tuple[str, Token]] = []      # (kind, token): bin | neg | paren | call
        open_groups = 0                            # parens and calls in `pending`

        def reduce_top() -> None:
            kind, tok = pending.pop()
            if kind == "neg":
                arg = operands.pop()
                operands.append(Const(-arg.value) if isinstance(arg, Const) else Unary("neg", arg))
            else:
                right = operands.pop()
                operands.append(Binary(tok.text, operands.pop(), right))

        def reduce_over(precedence: int) -> None:
            while pending and pending[-1][0] in ("bin", "neg") and _precedence(pending[-1]) >= precedence:
                reduce_top()

        while True:
            # an operand: prefix '-'s and open parentheses or calls, then a number or a reference
            while True:
                tok = self.peek()
                if self.accept("-"):
                    pending.append(("neg", tok))
                elif self.accept("("):
                    pending.append(("paren", tok))
                    open_groups += 1
                elif tok.kind == "ident" and self.is_op("(", 1):
                    self.function_name(tok)
                    self.next(), self.next()
                    pending.append(("call", tok))
                    open_groups += 1
                else:
                    break
            tok = self.peek()
            if tok.kind == "num":
                operands.append(Const(float(self.next().text)))
            elif tok.kind == "ident":
                self.next()
                labels, _ = self.labels(tok.value)
                operands.append(Ref(tok.value, labels, tok.line, tok.column))
            else:
                self.expected("a number, a tensor reference, a function call or '('")
            # operators and closing parentheses
            while True:
                if self.peek().kind == "op" and self.peek().text in _BINARY_PRECEDENCE:
                    tok = self.next()
                    reduce_over(_BINARY_PRECEDENCE[tok.text])
                    pending.append(("bin", tok))
                    break
                if not open_groups or not self.is_op(")"):
                    if open_groups:
                        self.expected("')'")
                    reduce_over(0)
                    return operands.pop()
                self.next()
                reduce_over(0)
                kind, tok = pending.pop()
                open_groups -= 1
                if kind == "call":
                    operands.append(Unary(tok.value, operands.pop()))

    def function_name(self, tok: Token) -> None:
        """Check the name of a call ``NAME(`` inside an expression."""
        if tok.value in AGGREGATES:
            self.fail(f"aggregate '{tok.value}' is only allowed as the outermost call of the "
                      f"right-hand side", tok)
        if tok.value not in UNARY_FUNCTIONS:
            self.fail(f"expected a function ({', '.join(UNARY_FUNCTIONS)}) but found unknown "
                      f"function '{tok.value}'", tok)


_BINARY_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_PREFIX_PRECEDENCE = 3       # '-' binds tighter than '*': -a*b is (-a)*b


def _precedence(entry: tuple[str, Token]) -> int:
    kind, tok = entry
    return _PREFIX_PRECEDENCE if kind == "neg" else _BINARY_PRECEDENCE[tok.text]


@gc_paused()
def parse_program(text: str, source: str | None = None, *, validate: bool = True) -> Program:
    """Parse ``.se`` text; with `validate` (the default) also run `validate_program`."""
    program = Program(source=source)
    defined: dict[str, int] = {}
    outputs: list[Token] = []
    for number, raw in enumerate(text.split("\n"), 1):
        tokens, code = tokenize_line(raw, number, source)
        p = _LineParser(tokens, source)
        first = p.peek()
        if first.kind == "eol":
            continue
        if first.kind == "ident" and first.value in ("input", "output") and not p.is_op("[", 1):
            p.next()
            if first.value == "output":
                outputs += p.output_names()
            else:
                decl = p.input_decl(defined)
                program.inputs[decl.name] = decl
            continue
        if first.kind != "ident":
            p.expected("'input', 'output' or a statement")
        name, labels = p.target(defined)
        p.expect("=")
        agg, expr = p.rhs()
        program.statements.append(Statement(name, labels, expr, agg, number, code))
    for tok in outputs:
        if tok.value not in defined:
            raise ProgramError(f"expected a declared input or defined tensor in 'output' but found "
                               f"unknown tensor '{tok.value}'", source=source, line=tok.line,
                               column=tok.column)
        if tok.value not in program.outputs:
            program.outputs.append(tok.value)
    if not program.outputs:
        if not program.statements:
            raise ProgramError("expected at least one statement or an 'output' line but found none",
                               source=source)
        program.outputs.append(program.statements[-1].out)
    if validate:
        from sparse_einsum.program.validate import validate_program
        validate_program(program)
    return program


def _fragment(text: str, source: str | None) -> _LineParser:
    if "\n" in text:
        raise ProgramError("expected a single line but found a line break", source=source)
    return _LineParser(tokenize_line(text, 1, source)[0], source)


def parse_labels(text: str, owner: str, *, bounds: bool = False, distinct: str | None = None,
                 source: str | None = None) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """``"i:2708, j"`` (no brackets) -> labels and declared bounds."""
    return _fragment(text, source).labels(owner, bounds=bounds, distinct=distinct, bracketed=False)


def parse_target(text: str, source: str | None = None) -> tuple[str, tuple[str, ...]]:
    """A left-hand side ``"AH[i,f]"`` -> (name, labels)."""
    p = _fragment(text, source)
    target = p.target()
    p.end()
    return target


def parse_rhs(text: str, source: str | None = None) -> tuple[str, Expr]:
    """A right-hand side ``"max(A[i,j] * 2)"`` -> (aggregate, expression)."""
    p = _fragment(text, source)
    if p.peek().kind == "eol":
        p.expected("an expression")
    return p.rhs()


def load_program(program: "Program | str | Path") -> Program:
    """A Program from a Program, a path, or program text (parsed and validated).

    A Path is a file. A string of one line is a file when such a file exists (whatever
    its suffix) or when it cannot be program text (it ends in ``.se`` or holds no ``[``:
    every program references a tensor); otherwise it is program text."""
    if isinstance(program, Program):
        return program
    text = str(program)
    if isinstance(program, Path) or ("\n" not in text and (
            _is_file(text) or text.rstrip().endswith(".se") or "[" not in text)):
        return parse_program(read_program_file(Path(text)), source=text)
    return parse_program(text)


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):      # a name too long, a NUL byte
        return False


def read_program_file(path: Path) -> str:
    """The text of a program file: UTF-8 (with or without a byte-order mark); a missing
    file, a binary file or another encoding is a one-line ProgramError naming the file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        what = "does not exist" if isinstance(exc, FileNotFoundError) else (
            "is a directory" if path.is_dir() else exc.strerror or type(exc).__name__)
        raise ProgramError(f"cannot read program: {what}", source=str(path)) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ProgramError("cannot read program: it is UTF-16 encoded; save it as UTF-8",
                           source=str(path))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ProgramError(f"cannot read program: byte 0x{raw[exc.start]:02x} is not UTF-8 "
                           f"text (a binary file, or another encoding: save it as UTF-8)",
                           source=str(path), line=line) from None
    nul = text.find("\0")
    if nul >= 0:
        raise ProgramError("cannot read program: it holds a NUL character (a binary file?)",
                           source=str(path), line=text.count("\n", 0, nul) + 1)
    return text
