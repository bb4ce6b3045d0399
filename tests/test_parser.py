"""Parser, validator, shape inference and builder of EinSum programs."""
from __future__ import annotations

import pytest

from sparse_einsum.errors import DataError, ProgramError
from sparse_einsum.program.builder import ProgramBuilder
from sparse_einsum.program.model import (
    Binary, Const, InputDecl, Program, Ref, Statement, TableSource, Unary, strip_locations,
)
from sparse_einsum.program.parser import parse_program, parse_rhs
from sparse_einsum.program.validate import infer_bounds, validate_program

GCN = """\
# one GCN layer
input A[i,j]
input H[j:2708,f]                 # declared bound j = 2708
input E[i,j] from edges(src, dst, weight)   # bound to a table
input W[f,g]
AH[i,f] = A[i,j] * H[j,f]        # labels not on the left are summed out
Z[i,g]  = AH[i,f] * W[f,g]
Y[i,g]  = relu(Z[i,g])
M[i]    = max(Z[i,g])             # explicit aggregate
S[]     = sum(exp(Z[i,g]))        # a scalar
P[i,g]  = exp(Z[i,g]) / S[] - 0.5 * -Y[i,g]
output Y, M
"""


def r(name: str, labels: str = "") -> Ref:
    return Ref(name, tuple(x for x in labels.split(",") if x))


def rhs(text: str):
    """The expression of a right-hand side, without locations."""
    agg, expr = parse_rhs(text)
    return strip_locations(Program({}, [Statement("X", (), expr, agg)], [])).statements[0].expr


def error(text: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        parse_program(text, "prog.se")
    return info.value


def assert_error(text: str, line: int | None, column: int | None, *parts: str) -> ProgramError:
    e = error(text)
    assert (e.source, e.line, e.column) == ("prog.se", line, column), str(e)
    for part in parts:
        assert part in str(e), str(e)
    return e


# ---------------------------------------------------------------- parsing

def test_gcn_program():
    p = parse_program(GCN, "gcn.se")
    assert p.source == "gcn.se"
    assert list(p.inputs) == ["A", "H", "E", "W"]
    assert p.inputs["H"] == InputDecl("H", ("j", "f"), (2708, None), None, 3)
    assert p.inputs["E"].source == TableSource("edges", ("src", "dst"), "weight")
    assert [s.out for s in p.statements] == ["AH", "Z", "Y", "M", "S", "P"]
    assert [s.agg for s in p.statements] == ["sum", "sum", "sum", "max", "sum", "sum"]
    assert [s.line for s in p.statements] == [6, 7, 8, 9, 10, 11]
    ah = p.statements[0]
    assert ah.out_labels == ("i", "f")
    assert ah.text == "AH[i,f] = A[i,j] * H[j,f]"
    assert ah.expr == Binary("*", Ref("A", ("i", "j"), 6, 11), Ref("H", ("j", "f"), 6, 20))
    assert p.statements[4].out_labels == ()
    assert p.statements[4].expr == Unary("exp", Ref("Z", ("i", "g"), 10, 19))
    assert p.outputs == ["Y", "M"]
    assert str(p.statements[5]) == "P[i,g] = ((exp(Z[i,g]) / S[]) - (0.5 * neg(Y[i,g])))"


@pytest.mark.parametrize("text, expected", [
    ("A[i] - B[i] * C[i]", Binary("-", r("A", "i"), Binary("*", r("B", "i"), r("C", "i")))),
    ("A[i] * B[i] - C[i]", Binary("-", Binary("*", r("A", "i"), r("B", "i")), r("C", "i"))),
    ("A[i] - B[i] - C[i]", Binary("-", Binary("-", r("A", "i"), r("B", "i")), r("C", "i"))),
    ("A[i] / B[i] / 2", Binary("/", Binary("/", r("A", "i"), r("B", "i")), Const(2.0))),
    ("(A[i] + 1) * 2", Binary("*", Binary("+", r("A", "i"), Const(1.0)), Const(2.0))),
    ("-A[i]", Unary("neg", r("A", "i"))),
    ("-A[i] * B[i]", Binary("*", Unary("neg", r("A", "i")), r("B", "i"))),
    ("2 * -A[i]", Binary("*", Const(2.0), Unary("neg", r("A", "i")))),
    ("A[i] - -3", Binary("-", r("A", "i"), Const(-3.0))),
    ("- -A[i]", Unary("neg", Unary("neg", r("A", "i")))),
    ("-(2) * A[i]", Binary("*", Const(-2.0), r("A", "i"))),
    ("neg(2) * A[i]", Binary("*", Unary("neg", Const(2.0)), r("A", "i"))),
    ("exp(log(relu(A[i] + 1)))",
     Unary("exp", Unary("log", Unary("relu", Binary("+", r("A", "i"), Const(1.0)))))),
    ("sigmoid(tanh(sqrt(abs(A[i]))))",
     Unary("sigmoid", Unary("tanh", Unary("sqrt", Unary("abs", r("A", "i")))))),
    ("A[i,i,j]", Ref("A", ("i", "i", "j"))),
    ("S[] * A[i]", Binary("*", r("S"), r("A", "i"))),
    ("A[ i , j ]", r("A", "i,j")),
    ("1 + 1.5 + .5 + 3. + 1e3 + 2.5E-2 * A[i]",
     Binary("+", Binary("+", Binary("+", Binary("+", Binary("+", Const(1.0), Const(1.5)),
                                                   Const(0.5)), Const(3.0)), Const(1000.0)),
            Binary("*", Const(0.025), r("A", "i")))),
    ("sum[i] + max[i]", Binary("+", r("sum", "i"), r("max", "i"))),   # names, not aggregates
])
def test_expressions(text, expected):
    assert rhs(text) == expected


@pytest.mark.parametrize("text, agg", [("sum(A[i])", "sum"), ("max(A[i] * 2)", "max"),
                                       ("min((A[i]))", "min"), ("A[i]", "sum")])
def test_aggregate_wrapper(text, agg):
    assert parse_rhs(text)[0] == agg


def test_statement_round_trips_through_str():
    p = parse_program(GCN)
    for st in p.statements:
        again = parse_rhs(str(st).split(" = ", 1)[1])
        assert strip_locations(Program({}, [Statement("X", (), again[1], again[0])], [])) == \
            strip_locations(Program({}, [Statement("X", (), st.expr, st.agg)], []))


def test_table_sources_and_hostile_quoted_names():
    p = parse_program('input E[i,j] from "x""; DROP TABLE y; --"("Src Col", "d""st", "v")\n'
                      'input F[i] from nodes(id)          # no value column: rows count 1.0\n'
                      'input C[] from consts(v)\n'
                      'input K[] from rows()\n'
                      'input G[i] from "Mixed"(KeY, "#not a comment")\n'
                      'Y[i] = E[i,j] * F[j] + C[] + K[] + G[i]\n')
    assert p.inputs["E"].source == TableSource('x"; DROP TABLE y; --', ("Src Col", 'd"st'), "v")
    assert p.inputs["F"].source == TableSource("nodes", ("id",), None)
    assert p.inputs["C"].source == TableSource("consts", (), "v")
    assert p.inputs["K"].source == TableSource("rows", (), None)
    assert p.inputs["G"].source == TableSource("Mixed", ("KeY",), "#not a comment")


def test_outputs_defaults_comments_and_keywords():
    p = parse_program("input A[i]   # comment\n\n  # only a comment\n"
                      "input[i] = A[i]\nfrom[i] = input[i]\t# tabs\r\noutput from\noutput A, from\n")
    assert [s.out for s in p.statements] == ["input", "from"]
    assert p.statements[1].text == "from[i] = input[i]"
    assert p.outputs == ["from", "A"]
    assert parse_program("input A[i]\nX[i] = A[i]\nY[] = A[i]").outputs == ["Y"]
    assert parse_program("output A\ninput A[i]").outputs == ["A"]    # output may come first
    assert parse_program("input A[i]\r\nY[i] = A[i]  \r\n").statements[0].text == "Y[i] = A[i]"


def test_input_defaults():
    """`default` gives the value of an input's absent entries, before or after its table
    source."""
    program = parse_program("input A[i,j] default inf\ninput B[j] default -2.5\n"
                            "input E[i,j] from edges(s, d, w) default -inf\n"
                            "input F[i,j] default 2 from edges(s, d, w)\nC[i] = min(A[i,j] + B[j])")
    assert [d.default for d in program.inputs.values()] == [float("inf"), -2.5, float("-inf"), 2.0]
    assert program.inputs["E"].source.table == program.inputs["F"].source.table == "edges"


def test_case_sensitive_names():
    p = parse_program("input a[i]\ninput A[I]\nY[i,I] = a[i] * A[I]")
    assert p.statements[0].out_labels == ("i", "I")


# ---------------------------------------------------------------- syntax errors

@pytest.mark.parametrize("text, line, column, parts", [
    ("input A[i]\nY[i] = foo(A[i])", 2, 8, ["unknown function 'foo'", "relu"]),
    ("input A[i]\nY[i] = A[i] @ 2", 2, 13, ["found '@'"]),
    ("input A[i]\nY[i] = A[i] $", 2, 13, ["found '$'"]),
    ("input A[i]\nY[i] = Ä[i]", 2, 8, ["found 'Ä'"]),
    ("input A[i,j]\n\nY[i = A[i,j]", 3, 5, ["expected ',' or ']' but found '='"]),
    ("input A[i]\nY[i] = A[i", 2, 11, ["expected ',' or ']' but found end of line"]),
    ("input A[i]\nY[i] = (A[i] + 1   # c", 2, 17, ["expected ')' but found end of line"]),
    ("input A[i]\nY[i] = exp(A[i]", 2, 16, ["expected ')' but found end of line"]),
    ("input A[i", 1, 10, ["expected ':', ',' or ']' but found end of line"]),
    ("input A[i]\nY[i] A[i]", 2, 6, ["expected '=' but found 'A'"]),
    ("input A[i]\nY[i]", 2, 5, ["expected '=' but found end of line"]),
    ("input A[i]\nY[i] = 2 * sum(A[i])", 2, 12, ["aggregate 'sum'", "outermost"]),
    ("input A[i]\nY[i] = max(max(A[i]))", 2, 12, ["aggregate 'max'", "outermost"]),
    ("input A[i]\nY[] = min(A[i]) + 1", 2, 7, ["aggregate 'min'", "outermost", "found '+'"]),
    ("input A[i]\nY[i] = A[i]\nY[i] = A[i]", 3, 1, ["tensor 'Y' is already defined on line 2"]),
    ("input A[i]\ninput A[j]", 2, 7, ["tensor 'A' is already defined on line 1"]),
    ("input A[i]\nA[i] = A[i]", 2, 1, ["tensor 'A' is already defined on line 1"]),
    ("input A[i]\nY[i,i] = A[i]", 2, 5, ["label 'i' repeats", "left-hand side of Y"]),
    ("input A[i,j,i]", 1, 13, ["label 'i' repeats", "input A"]),
    ("input A[i:0]", 1, 11, ["positive integer bound for label 'i' but found '0'"]),
    ("input A[i:2.5]", 1, 11, ["positive integer", "found '2.5'"]),
    ("input A[i:1e3]", 1, 11, ["positive integer", "found '1e3'"]),
    ("input A[i:-3]", 1, 11, ["positive integer", "found '-'"]),
    ("input A[i:]", 1, 11, ["positive integer", "found ']'"]),
    ("input A[i]\nY[i] = A[i]\noutput Y, Z", 3, 11, ["unknown tensor 'Z'"]),
    ("input A[i]\noutput", 2, 7, ["expected a tensor name but found end of line"]),
    ("input A[i]\ninput", 2, 6, ["expected an input name but found end of line"]),
    ("input A[i]\noutput A,", 2, 10, ["expected a tensor name but found end of line"]),
    ("input A[i]\noutput A B", 2, 10, ["expected ',' or end of line but found 'B'"]),
    ("input A[i]\n[i] = A[i]", 2, 1, ["found '['"]),
    ("input A[i]\n3 = A[i]", 2, 1, ["found '3'"]),
    ("input A[i]\nY[i] = A", 2, 9, ["expected '[' after 'A' but found end of line"]),
    ("input A[i]\nY[i] = A(i)", 2, 8, ["unknown function 'A'"]),
    ("input A[i]\nY[i] =", 2, 7, ["expected a number", "found end of line"]),
    ("input A[i]\nY[i] = A[i] B[i]", 2, 13, ["expected an operator or end of line but found 'B'"]),
    ("input A[i]\nY[i] = A[i,]", 2, 12, ["expected a label but found ']'"]),
    ("input A[i]\nY[i:3] = A[i]", 2, 4, ["expected ',' or ']' but found ':'"]),
    ("input A[i]\nY[i] = A[i] + \"A\"[i]", 2, 15, ["found '\"A\"'"]),
    ('input E[i,j] from t("a", b, c, d)', 1, 19, ["2 key columns", "found 4 columns"]),
    ('input E[i,j] from t(a)', 1, 19, ["2 key columns", "found 1 columns"]),
    ('input E[i,j] from t(a', 1, 22, ["expected ',' or ')' but found end of line"]),
    ('input E[i,j] from t(a b)', 1, 23, ["expected ',' or ')' but found 'b'"]),
    ('input E[i,j] from "t', 1, 19, ["closing the quoted identifier"]),
    ('input E[i,j] from "t"(a, "b)', 1, 26, ["closing the quoted identifier"]),
    ('input E[i,j] from ""(a,b)', 1, 19, ["expected a table name but found '\"\"'"]),
    ('input E[i,j] from 3(a,b)', 1, 19, ["expected a table name but found '3'"]),
    ('input E[i,j] from t', 1, 20, ["expected '(' after the table name"]),
    ('input E[i,j] edges', 1, 14, ["expected 'from', 'default' or end of line but found 'edges'"]),
    ('input E[i,j] default x', 1, 22, ["expected a number, inf or -inf after 'default'"]),
    ('input E[i,j] default inf 2', 1, 26, ["expected 'from' or end of line"]),
    ('input E[i,j] from e(a, b, v) from e(a, b, v)', 1, 30, ["expected 'default' or end of line"]),
    ("input 3[i]", 1, 7, ["expected an input name but found '3'"]),
    ("input A[i]\noutput = A[i]", 2, 8, ["expected a tensor name but found '='"]),
    ("input A i", 1, 9, ["expected '[' after 'A' but found 'i'"]),
])
def test_syntax_errors(text, line, column, parts):
    assert_error(text, line, column, *parts)


def test_error_message_format():
    e = assert_error("input A[i]\nY[i] = A[i\n", 2, 11)
    assert str(e) == "prog.se:2:11: expected ',' or ']' but found end of line"
    assert e.bare_message == "expected ',' or ']' but found end of line"


def test_empty_program():
    e = error("# nothing\n\n")
    assert "expected at least one statement" in str(e) and e.line is None


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("text, line, column, parts", [
    ("input A[i]\nY[i] = B[i]", 2, 8, ["undefined tensor 'B'"]),
    ("input A[i]\nY[i] = A[i] + B[i]\nB[i] = A[i]", 2, 15,
     ["tensor 'B' is used before it is defined on line 3"]),
    ("input A[i]\nY[i] = B[i]\nB[i] = Y[i]", 2, 8,
     ["used before it is defined on line 3", "cycle Y -> B -> Y"]),
    ("input A[i]\nY[i] = Y[i] * A[i]", 2, 8, ["tensor 'Y' is used before it is defined on line 2",
                                              "cycle Y -> Y"]),
    ("input A[i,j]\nY[i] = A[i]", 2, 8, ["A has 2 labels [i,j] but is used with 1: A[i]"]),
    ("input A[i]\nX[i] = A[i]\nY[i] = X[i,i]", 3, 8, ["X has 1 labels", "used with 2"]),
    ("input A[i,j]\nY[i,k] = A[i,j]", 2, None, ["label 'k'", "Y[i,k]", "right-hand side"]),
    ("input A[i:3]\ninput B[i:4]\nY[i] = A[i] * B[i]", 3, 15,
     ["label 'i'", "bound 3 in A[i]", "bound 4 in B[i]"]),
    ("input A[i:3]\nZ[i] = exp(A[i])\ninput B[j:4]\nY[i] = Z[i] * B[i]", 4, 15,
     ["label 'i'", "bound 3 in Z[i]", "bound 4 in B[i]"]),
    ("input A[i:3,j:4]\nD[i] = A[i,i]", 2, 8, ["label 'i'", "bound 3 in A[i,i]", "bound 4 in A[i,i]"]),
    ("input A[i]\nY[] = 1 + 2", 2, None, ["no tensor reference", "Y"]),
])
def test_validate_errors(text, line, column, parts):
    assert_error(text, line, column, *parts)


def test_bounds_are_per_statement():
    # the same label name in different statements is unrelated
    parse_program("input A[i:3]\ninput B[i:4]\nX[i] = A[i]\nY[i] = B[i]\nZ[i,j] = X[i] * Y[j]")


def test_parse_without_validation():
    p = parse_program("Y[i] = B[i]", validate=False)
    assert p.outputs == ["Y"]
    with pytest.raises(ProgramError, match="undefined tensor 'B'"):
        validate_program(p)


def decl(name: str, labels: str, bounds=None, source=None) -> InputDecl:
    labs = tuple(labels.split(",")) if labels else ()
    return InputDecl(name, labs, tuple(bounds or [None] * len(labs)), source)


def test_validate_api_programs():
    A = decl("A", "i")
    # a genuine cycle built out of order
    cyc = Program({"A": A}, [Statement("X", ("i",), Binary("+", r("Y", "i"), r("A", "i"))),
                             Statement("Y", ("i",), r("X", "i"))], ["Y"], "api")
    with pytest.raises(ProgramError, match=r"used before it is defined on statement 2 "
                                           r"\(dependency cycle X -> Y -> X\)"):
        validate_program(cyc)
    # out of order without a cycle
    ooo = Program({"A": A}, [Statement("Y", ("i",), r("X", "i")),
                             Statement("X", ("i",), r("A", "i"))], ["Y"])
    with pytest.raises(ProgramError, match="used before it is defined on statement 2$"):
        validate_program(ooo)
    bad = [
        (Program({"E": decl("E", "i,j", source=TableSource("t", ("a",), "v"))}, [], ["E"]),
         "input E has 2 labels but its table source t lists 1 key columns"),
        (Program({"A": decl("A", "i,i")}, [], ["A"]), "labels of input A[i,i] repeat"),
        (Program({"A": decl("A", "i", [0])}, [], ["A"]), "positive integer"),
        (Program({"A": A}, [Statement("A", ("i",), r("A", "i"))], ["A"]),
         "tensor 'A' is already declared as an input"),
        (Program({"A": A}, [Statement("Y", ("i", "i"), r("A", "i"))], ["Y"]),
         "left-hand side Y[i,i] repeat"),
        (Program({"A": A}, [Statement("Y", ("i",), r("A", "i"), "avg")], ["Y"]), "'avg'"),
        (Program({"A": A}, [Statement("Y", ("i",), Unary("cos", r("A", "i")))], ["Y"]), "'cos'"),
        (Program({"A": A}, [Statement("Y", ("i",), Binary("%", r("A", "i"), Const(2)))], ["Y"]), "'%'"),
        (Program({"A": A}, [Statement("Y", ("i",), r("A", "i"))], []), "no output"),
        (Program({"A": A}, [Statement("Y", ("i",), r("A", "i"))], ["Q"]), "output 'Q'"),
    ]
    for program, message in bad:
        with pytest.raises(ProgramError, match=message.replace("[", r"\[").replace("]", r"\]")):
            validate_program(program)


# ---------------------------------------------------------------- infer_bounds

def test_infer_bounds():
    p = parse_program(GCN)
    shapes = infer_bounds(p, {"A": (5, 2708), "H": (2708, 16), "E": (5, 5), "W": (16, 4)})
    assert shapes == {"A": (5, 2708), "H": (2708, 16), "E": (5, 5), "W": (16, 4),
                      "AH": (5, 16), "Z": (5, 4), "Y": (5, 4), "M": (5,), "S": (), "P": (5, 4)}
    # a table input with every bound declared needs no shape
    q = parse_program("input E[i:3,j:4] from t(a,b)\ninput c[]\nY[i] = E[i,j] * c[]")
    assert infer_bounds(q, {"c": ()})["Y"] == (3,)


@pytest.mark.parametrize("shapes, parts", [
    ({"A": (5, 2708), "H": (2700, 16), "W": (16, 4), "E": (5, 5)},
     ["'H'", "label 'j'", "2708", "2700"]),
    ({"A": (5, 2708), "H": (2708,), "W": (16, 4), "E": (5, 5)},
     ["'H'", "rank 2", "rank 1"]),
    ({"A": (5, 2708), "H": (2708, 16), "W": (15, 4), "E": (5, 5)},
     ["gcn.se: line 7", "label 'f'", "size 16 in AH", "size 15 in W"]),
    ({"A": (5, 2700), "H": (2708, 16), "W": (16, 4), "E": (5, 5)},
     ["line 6", "label 'j'", "size 2700 in A", "size 2708 in H"]),
    ({"A": (5, 2708), "H": (2708, 16), "W": (16, 4)}, ["no data for input 'E'"]),
    ({"A": (5, 2708), "H": (2708, 16), "W": (16, 4), "E": (5, 5), "Q": (1,)}, ["'Q'"]),
])
def test_infer_bounds_errors(shapes, parts):
    with pytest.raises(DataError) as info:
        infer_bounds(parse_program(GCN, "gcn.se"), shapes)
    for part in parts:
        assert part in str(info.value), str(info.value)


# ---------------------------------------------------------------- builder

def gcn_builder() -> ProgramBuilder:
    p = ProgramBuilder()
    A = p.input("A", "i,j")
    H = p.input("H", ["j:2708", "f"])
    p.input("E", ["i", "j"], table=("edges", ("src", "dst"), "weight"))
    p.input("W", "f, g")
    p.let("AH[i,f]", A["i,j"] * H["j", "f"])
    Z = p.let("Z[i,g]", "AH[i,f] * W[f,g]")
    Y = p.let("Y[i,g]", p.relu(Z["i,g"]))
    M = p.let("M[i]", p.max(Z["i,g"]))
    S = p.let("S[]", p.sum(p.exp(Z["i,g"])))
    p.let("P[i,g]", p.exp(Z["i,g"]) / S[()] - 0.5 * -Y["i,g"])
    p.output(Y, "M", M)
    return p


def test_builder_matches_parsed_text():
    built = gcn_builder().build()
    assert strip_locations(built) == strip_locations(parse_program(GCN))
    assert built.statements[0].text == "AH[i,f] = (A[i,j] * H[j,f])"


def test_builder_operators():
    p = ProgramBuilder()
    A = p.input("A", "i")
    a = A["i"]
    cases = [
        (1 + a, "1 + A[i]"), (a + 1, "A[i] + 1"), (2 - a, "2 - A[i]"), (a - 2.5, "A[i] - 2.5"),
        (3 * a, "3 * A[i]"), (a * 3, "A[i] * 3"), (1 / a, "1 / A[i]"), (a / 4, "A[i] / 4"),
        (-a, "-A[i]"), (2 * -a, "2 * -A[i]"), (a - a * a, "A[i] - A[i] * A[i]"),
        (p.neg(a), "neg(A[i])"), (p.abs(p.sqrt(p.log(a))), "abs(sqrt(log(A[i])))"),
        (p.sigmoid(p.tanh(a)) + p.exp(a) * p.relu(a), "sigmoid(tanh(A[i])) + exp(A[i]) * relu(A[i])"),
        (a * A["i,i"] + 0, "A[i] * A[i,i] + 0"),
    ]
    for term, text in cases:
        assert term.expr == rhs(text), text
    assert p.let("N[i]", p.min(a)).labels == ("i",)
    assert p.build().outputs == ["N"]          # default output: the last statement


def test_builder_errors():
    p = ProgramBuilder()
    A = p.input("A", "i")
    with pytest.raises(ProgramError, match="aggregate 'max' must be the outermost"):
        p.max(A["i"]) + 1
    with pytest.raises(ProgramError, match="aggregate 'sum' must be the outermost"):
        p.relu(p.sum(A["i"]))
    with pytest.raises(ProgramError, match="aggregate 'max' is only allowed as the outermost"):
        p.let("Y[i]", "2 * max(A[i])")
    with pytest.raises(ProgramError, match="tensor 'A' is already defined"):
        p.input("A", "j")
    with pytest.raises(ProgramError, match="expected a tensor name"):
        p.input("A B", "j")
    with pytest.raises(ProgramError, match="label 'j' repeats"):
        p.input("B", "j,j")
    with pytest.raises(ProgramError, match="positive integer"):
        p.input("B", "j:0")
    with pytest.raises(ProgramError, match="label 'i' repeats in the left-hand side of Y"):
        p.let("Y[i,i]", A["i"])
    with pytest.raises(ProgramError, match="expected a label"):
        A["i,"]
    with pytest.raises(TypeError):
        A["i"] * "x"
    p.let("Y[i,k]", A["i"])
    with pytest.raises(ProgramError, match="label 'k' of Y"):
        p.build()
    assert p.build(validate=False).outputs == ["Y"]


def test_builder_table_source_object():
    p = ProgramBuilder("api")
    E = p.input("E", "i,j", table=TableSource('x"; DROP TABLE y; --', ("a", "b")))
    p.let("D[i]", E["i,j"])
    program = p.build()
    assert program.inputs["E"].source == TableSource('x"; DROP TABLE y; --', ("a", "b"), None)
    assert program.source == "api"
