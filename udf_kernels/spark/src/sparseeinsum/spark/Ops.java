// Generated from sparse_einsum/program/ops.py by `python -m sparse_einsum.program.ops`: do not edit.
package sparseeinsum.spark;

/** The operations of the kernel specs (binary ones first), as in se_ops.h. */
final class Ops {
    static final String[] NAMES = {"mul", "add", "sub", "div", "id", "neg", "relu", "exp", "log", "sqrt", "sigmoid", "tanh", "abs", "step", "mulc", "addc", "subc", "rsubc", "divc", "rdivc", "maxc", "minc", "powc"};
    static final int N_BINARY = 4;
    static final int FIRST_CONST = 14;

    private Ops() {
    }

    /** Operation `op` of x (input a), y (input b) and c (the constant). */
    static double apply(int op, double x, double y, double c) {
        switch (op) {
            case 0: return x * y;
            case 1: return x + y;
            case 2: return x - y;
            case 3: return x / y;
            case 4: return x;
            case 5: return -x;
            case 6: return (x < 0.0 ? 0.0 : x);
            case 7: return Math.exp(x);
            case 8: return Math.log(x);
            case 9: return Math.sqrt(x);
            case 10: return 1.0 / (1.0 + Math.exp(-x));
            case 11: return Math.tanh(x);
            case 12: return Math.abs(x);
            case 13: return (x > 0.0 ? 1.0 : 0.0);
            case 14: return x * c;
            case 15: return x + c;
            case 16: return x - c;
            case 17: return c - x;
            case 18: return x / c;
            case 19: return c / x;
            case 20: return ((x > c || Double.isNaN(x)) ? x : c);
            case 21: return ((x < c || Double.isNaN(x)) ? x : c);
            case 22: return Math.pow(x, c);
            default: throw new IllegalArgumentException("operation " + op);
        }
    }

    /** out[o + i] = operation `op` of a[oa + i * ia], b[ob + i * ib] and c, for i < n:
     *  a loop per operation, without a switch per element (b unread by unary ones). */
    static void row(int op, double[] a, int oa, int ia, double[] b, int ob, int ib, double c,
                    double[] out, int o, int n) {
        switch (op) {
            case 0:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    double y = b[ob + i * ib];
                    out[o + i] = x * y;
                }
                return;
            case 1:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    double y = b[ob + i * ib];
                    out[o + i] = x + y;
                }
                return;
            case 2:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    double y = b[ob + i * ib];
                    out[o + i] = x - y;
                }
                return;
            case 3:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    double y = b[ob + i * ib];
                    out[o + i] = x / y;
                }
                return;
            case 4:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = x;
                }
                return;
            case 5:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = -x;
                }
                return;
            case 6:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = (x < 0.0 ? 0.0 : x);
                }
                return;
            case 7:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.exp(x);
                }
                return;
            case 8:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.log(x);
                }
                return;
            case 9:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.sqrt(x);
                }
                return;
            case 10:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = 1.0 / (1.0 + Math.exp(-x));
                }
                return;
            case 11:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.tanh(x);
                }
                return;
            case 12:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.abs(x);
                }
                return;
            case 13:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = (x > 0.0 ? 1.0 : 0.0);
                }
                return;
            case 14:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = x * c;
                }
                return;
            case 15:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = x + c;
                }
                return;
            case 16:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = x - c;
                }
                return;
            case 17:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = c - x;
                }
                return;
            case 18:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = x / c;
                }
                return;
            case 19:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = c / x;
                }
                return;
            case 20:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = ((x > c || Double.isNaN(x)) ? x : c);
                }
                return;
            case 21:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = ((x < c || Double.isNaN(x)) ? x : c);
                }
                return;
            case 22:
                for (int i = 0; i < n; i++) {
                    double x = a[oa + i * ia];
                    out[o + i] = Math.pow(x, c);
                }
                return;
            default: throw new IllegalArgumentException("operation " + op);
        }
    }

    /** Whether a kernel over one packed operand of default `fill` runs over its
     *  stored entries (SPARSE_DRIVEN; aggregates numbered sum, max, min). */
    static boolean sparseDriven(int op, int agg, double fill) {
        return op == 0 && agg == 0 && fill == 0.0
            || op == 1 && agg == 2 && fill == Double.POSITIVE_INFINITY
            || op == 1 && agg == 1 && fill == Double.NEGATIVE_INFINITY;
    }
}
