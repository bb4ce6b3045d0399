package sparseeinsum.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;

/**
 * se_fused(fspec, a, b, ...): a chain of element-wise operations over DOUBLE arrays and
 * DOUBLEs in one pass (the fused spec of sparse_einsum/kernels/spec.py, as the C core's
 * se_run_fused reads it). A NULL input is absent, all zeros; each operation's result is
 * absent (zeros) or not by its rule; NULL when the last one's is absent.
 */
public class FusedFn extends Bound implements ScalarFunction<ArrayData> {
    FusedFn(DataType[] inputs) {
        super("se_fused", KernelFn.ARRAY, inputs);
    }

    /** A parsed spec: the leaves' lengths and the postfix tokens. */
    record Spec(int n, int[] leafSizes, int[] leaf, int[] op, double[] c, char[] rule, int[] decides) {
        static Spec parse(String text) {
            String[] f = text.split(";", -1);
            if (f.length != 4 || !f[0].equals("fused")) {
                throw bad(text, "expected fused;N;LEAF_SIZES;TOKENS");
            }
            int n = Integer.parseInt(f[1]);
            String[] sizes = f[2].isEmpty() ? new String[0] : f[2].split(",");
            int[] leafSizes = new int[sizes.length];
            for (int k = 0; k < sizes.length; k++) {
                leafSizes[k] = Integer.parseInt(sizes[k]);
                if (leafSizes[k] != n && leafSizes[k] != 1) {
                    throw bad(text, "leaf " + k + " has " + leafSizes[k] + " elements, not N or 1");
                }
            }
            String[] tokens = f[3].split(",");
            int t = tokens.length;
            int[] leaf = new int[t], op = new int[t], decides = new int[t];
            double[] c = new double[t];
            char[] rule = new char[t];
            int depth = 0;
            for (int i = 0; i < t; i++) {
                String tok = tokens[i];
                leaf[i] = -1;
                if (tok.startsWith("$")) {
                    leaf[i] = Integer.parseInt(tok.substring(1));
                    if (leaf[i] < 0 || leaf[i] >= leafSizes.length) {
                        throw bad(text, "bad leaf \"" + tok + "\" (of " + leafSizes.length + ")");
                    }
                    depth++;
                    continue;
                }
                int at = tok.indexOf('@');
                if (at < 0) {
                    throw bad(text, "operation \"" + tok + "\" has no @RULE");
                }
                String code = tok.substring(0, at), r = tok.substring(at + 1);
                int colon = code.indexOf(':');
                String name = colon < 0 ? code : code.substring(0, colon);
                op[i] = java.util.Arrays.asList(Ops.NAMES).indexOf(name);
                if (op[i] < 0 || (op[i] >= Ops.FIRST_CONST) != (colon >= 0)) {
                    throw bad(text, "bad operation \"" + code + "\"");
                }
                c[i] = colon < 0 ? 0.0 : Double.parseDouble(code.substring(colon + 1));
                int arity = op[i] < Ops.N_BINARY ? 2 : 1;
                rule[i] = r.isEmpty() ? '?' : r.charAt(0);
                for (int p = 1; rule[i] == 'u' && p < r.length(); p++) {
                    int k = r.charAt(p) - '0';
                    if (k < 0 || k >= arity) {
                        throw bad(text, "bad rule \"" + r + "\"");
                    }
                    decides[i] |= 1 << k;
                }
                if (!(r.equals("j") || r.equals("f") || (rule[i] == 'u' && decides[i] != 0))) {
                    throw bad(text, "bad rule \"" + r + "\"");
                }
                if (depth < arity) {
                    throw bad(text, "\"" + name + "\" needs " + arity + " operand(s)");
                }
                depth -= arity - 1;
            }
            if (depth != 1 || leaf[t - 1] >= 0) {
                throw bad(text, "the tokens must end in an operation leaving one value");
            }
            return new Spec(n, leafSizes, leaf, op, c, rule, decides);
        }

        private static IllegalArgumentException bad(String text, String why) {
            return new IllegalArgumentException("se_fused: invalid spec \"" + text + "\": " + why);
        }

        /** The chain over `leaves` (null: absent); null when its result is absent. */
        double[] run(double[][] leaves) {
            List<double[]> values = new ArrayList<>();      // null: absent, all zeros
            for (int i = 0; i < leaf.length; i++) {
                if (leaf[i] >= 0) {
                    double[] x = leaves[leaf[i]];
                    values.add(x == null ? null : x.length == n ? x : filled(x[0]));
                    continue;
                }
                boolean binary = op[i] < Ops.N_BINARY;
                double[] y = binary ? values.remove(values.size() - 1) : null;
                double[] x = values.remove(values.size() - 1);
                boolean present = rule[i] == 'f'
                    || (rule[i] == 'j' ? x != null && (!binary || y != null)
                        : ((decides[i] & 1) != 0 && x != null) || ((decides[i] & 2) != 0 && y != null));
                double[] out = null;
                if (present) {
                    out = new double[n];
                    double[] zeros = x == null || (binary && y == null) ? new double[n] : null;
                    Ops.row(op[i], x == null ? zeros : x, 0, 1, y == null ? zeros : y, 0, 1, c[i], out, 0, n);
                }
                values.add(out);
            }
            return values.get(0);
        }

        private double[] filled(double v) {
            double[] out = new double[n];
            java.util.Arrays.fill(out, v);
            return out;
        }
    }

    @Override
    public ArrayData produceResult(InternalRow input) {
        if (input.isNullAt(0)) {
            return null;
        }
        String text = input.getUTF8String(0).toString();
        Spec spec = Spec.parse(text);
        int nargs = input.numFields() - 1;
        if (nargs != spec.leafSizes().length) {
            throw new IllegalArgumentException("se_fused: spec \"" + text + "\" reads "
                + spec.leafSizes().length + " inputs, given " + nargs);
        }
        double[][] leaves = new double[nargs][];
        for (int k = 0; k < nargs; k++) {
            if (input.isNullAt(k + 1)) {
                continue;
            }
            leaves[k] = inputs[k + 1] instanceof ArrayType
                ? Operands.doubles(input.getArray(k + 1), "se_fused", "input " + k)
                : new double[] {input.getDouble(k + 1)};
            if (leaves[k].length != spec.leafSizes()[k]) {
                throw new IllegalArgumentException("se_fused: input " + k + " has "
                    + leaves[k].length + " elements but spec \"" + text + "\" reads "
                    + spec.leafSizes()[k]);
            }
        }
        double[] out = spec.run(leaves);
        return out == null ? null : Arrays2.array(out);
    }
}
