/* Generated from sparse_einsum/program/ops.py by `python -m sparse_einsum.program.ops`: do not edit. */
#ifndef SE_OPS_H
#define SE_OPS_H

/* name, expression of x (input a), y (input b) and c (constant) */
#define SE_OPS(X) \
	X(mul, x * y) \
	X(add, x + y) \
	X(sub, x - y) \
	X(div, x / y) \
	X(id, x) \
	X(neg, -x) \
	X(relu, (x < 0.0 ? 0.0 : x)) \
	X(exp, exp(x)) \
	X(log, log(x)) \
	X(sqrt, sqrt(x)) \
	X(sigmoid, 1.0 / (1.0 + exp(-x))) \
	X(tanh, tanh(x)) \
	X(abs, fabs(x)) \
	X(step, (x > 0.0 ? 1.0 : 0.0)) \
	X(mulc, x * c) \
	X(addc, x + c) \
	X(subc, x - c) \
	X(rsubc, c - x) \
	X(divc, x / c) \
	X(rdivc, c / x) \
	X(maxc, ((x > c || isnan(x)) ? x : c)) \
	X(minc, ((x < c || isnan(x)) ? x : c)) \
	X(powc, pow(x, c))

#define SE_N_BINARY 4
#define SE_FIRST_CONST OP_mulc

/* op, aggregate and packed operand's default of the kernels that run over its
 * stored entries (SPARSE_DRIVEN) */
#define SE_SPARSE_DRIVEN(X) \
	X(mul, SE_AGG_SUM, 0.0) \
	X(add, SE_AGG_MIN, INFINITY) \
	X(add, SE_AGG_MAX, -INFINITY)

#endif
